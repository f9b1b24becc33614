/**
 * Concurrency keys, fair lanes and priorities end to end (store/port.ts
 * invariants `concurrency-keys`, `fair-lanes`, `priorities`; docs/operations.md,
 * "Concurrency and fairness"):
 *
 * 1. Three worker processes on one Redis, 50 agents whose tasks share key
 *    `k` with limit 2: the store, sampled throughout, never counts more
 *    than 2 running under `k`; the turns the processes record never overlap
 *    more than 2 deep; every turn ends done.
 *    The same on the sharded layout (Redis Cluster's, 4 homes on one server).
 * 2. A process holding both slots of `k` (its model never answers) is
 *    SIGKILLed: the third task of `k` does not start while the dead process's
 *    leases run, and starts once they ran out (the slots free at the lease end).
 * 3. One worker loop, tasks of one lane with priorities: they start highest
 *    priority first (memory and Redis).
 * 4. The 40-and-1 case: 4 worker loops, one-second turns; tenant A posts 40
 *    tasks on 40 agents with key `tenant:A`, then B one with `tenant:B`.
 *    Start times come from the event log (the `TASK_STARTED` transition's
 *    `at`). The verdict does not rest on wall-clock speed (a busy machine
 *    stretches every turn alike): it counts A's turns that *ended* before B
 *    started, at most one wave of the 4 loops (first-come-first-served would
 *    put B behind all 40); B's wait in ms is printed beside it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { useRedisServer } from "../helpers/redis.ts";

const server = useRedisServer();
let n = 0;

const SCRIPT = fileURLToPath(new URL("../helpers/lane-process.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function spawnWorker(name: string, env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", SCRIPT], {
    cwd: ROOT,
    env: { ...process.env, ...env, GH_LANE_NAME: name },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  child.stderr!.on("data", (d) => (err += String(d)));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d) => String(d).includes('"ready":true') && resolve());
    child.once("exit", (code) => reject(new Error(`${name} exited (${code}) before it was ready: ${err}`)));
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return { child, ready, exited };
}

type Turn = { worker: string; agentId: string; start: number; end: number };

/** The most turns running at once among recorded [start, end] intervals. */
function deepestOverlap(turns: readonly Turn[]): number {
  const edges = turns.flatMap((t) => [[t.start, 1], [t.end, -1]] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let depth = 0;
  let deepest = 0;
  for (const [, d] of edges) deepest = Math.max(deepest, (depth += d));
  return deepest;
}

function rig(limits: Record<string, number>, lease: number, shards?: number) {
  const prefix = `lanes${++n}`;
  const sideKey = `${prefix}:side`;
  const env = {
    GH_LANE_REDIS_URL: server.url, GH_LANE_PREFIX: prefix, GH_LANE_SIDE_KEY: sideKey, GH_LANE_LIMITS: JSON.stringify(limits),
    GH_LANE_LEASE_MS: String(lease), GH_LANE_TURN_MS: "40", GH_LANE_LOOPS: "3",
    ...(shards ? { GH_LANE_SHARDS: String(shards) } : {}),
  };
  const raw = new Redis(server.url);
  const store = redisStore({ url: server.url, prefix, ...(shards ? { shards } : {}) });
  const enqueue = (id: string, key: string) =>
    store.enqueueTask({ agentId: id, agentName: "lane", workerTarget: "default", input: "x", options: {}, turnId: `t_${id}`, now: Date.now(), concurrencyKey: key });
  const turns = async () => ((await raw.lrange(sideKey, 0, -1)) as string[]).map((s) => JSON.parse(s) as Turn);
  const running = async (key: string) => {
    const u = await store.concurrencyUsage({ workerTarget: "default", now: Date.now(), limit: 1, keys: [key], concurrencyLimits: limits });
    return u.lanes.find((l) => l.key === key)?.running ?? 0;
  };
  return { env, raw, store, enqueue, turns, running };
}

// The one-Redis layout, and the sharded layout of a Redis Cluster (4 homes on one server: the key counted in its own slot).
for (const shards of [undefined, 4]) describe(`a key's limit holds across three processes on one Redis${shards ? `, sharded layout (${shards} homes)` : ""}`, () => {
  it("50 agents, limit 2: never more than 2 running (sampled from the store), all end done", async () => {
    const r = rig({ k: 2 }, 5_000, shards);
    const workers = ["p1", "p2", "p3"].map((name) => spawnWorker(name, r.env));
    try {
      await Promise.all(workers.map((w) => w.ready));
      const ids = Array.from({ length: 50 }, (_, i) => `a${i}`);
      for (const id of ids) expect((await r.enqueue(id, "k")).status).toBe("enqueued");
      let samples = 0;
      let most = 0;
      const end = Date.now() + 90_000;
      while ((await r.turns()).length < 50 && Date.now() < end) {
        most = Math.max(most, await r.running("k"));
        samples++;
        await sleep(5);
      }
      const turns = await r.turns();
      expect(turns.length).toBe(50);
      expect(samples).toBeGreaterThan(10);
      expect(most).toBeLessThanOrEqual(2);
      expect(most).toBeGreaterThanOrEqual(1);
      expect(deepestOverlap(turns)).toBeLessThanOrEqual(2);
      // More than one process ran turns of k (the limit is shared, not per process).
      expect(new Set(turns.map((t) => t.worker)).size).toBeGreaterThan(1);
      for (const id of ids) {
        const deadline = Date.now() + 10_000;
        while ((await r.store.getTurn(id, `t_${id}`))?.status !== "done" && Date.now() < deadline) await sleep(20);
        expect((await r.store.getTurn(id, `t_${id}`))?.status).toBe("done");
      }
      expect(await r.running("k")).toBe(0);
    } finally {
      for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
      r.raw.disconnect();
      await r.store.close();
    }
  }, 150_000);

  it("a SIGKILLed process's slots free when its leases run out", async () => {
    const lease = 2_000;
    const r = rig({ k: 2 }, lease, shards);
    const holder = spawnWorker("holder", { ...r.env, GH_LANE_HANG: "1" });
    let other: ReturnType<typeof spawnWorker> | null = null;
    try {
      await holder.ready;
      await r.enqueue("h1", "k");
      await r.enqueue("h2", "k");
      const until = Date.now() + 20_000;
      while ((await r.running("k")) < 2 && Date.now() < until) await sleep(20);
      expect(await r.running("k")).toBe(2);
      // Another process and a third task of k: it waits while the holder lives (and renews its leases).
      other = spawnWorker("other", r.env);
      await other.ready;
      await r.enqueue("w3", "k");
      await sleep(lease * 1.5);
      expect((await r.turns()).some((t) => t.agentId === "w3")).toBe(false);
      expect(await r.running("k")).toBe(2);
      holder.child.kill("SIGKILL");
      await holder.exited;
      const killedAt = Date.now();
      const end = Date.now() + 30_000;
      while ((await r.turns()).length < 3 && Date.now() < end) {
        expect(await r.running("k")).toBeLessThanOrEqual(2);
        await sleep(20);
      }
      const turns = await r.turns();
      // The third task and both abandoned turns ran on the other process, after the holder's leases ran out.
      expect(turns.map((t) => t.agentId).sort()).toEqual(["h1", "h2", "w3"]);
      expect(turns.every((t) => t.worker === "other")).toBe(true);
      const w3 = turns.find((t) => t.agentId === "w3")!;
      expect(w3.start - killedAt).toBeLessThan(lease + 15_000);
      expect(deepestOverlap(turns)).toBeLessThanOrEqual(2);
    } finally {
      for (const w of [holder, other]) if (w && w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
      r.raw.disconnect();
      await r.store.close();
    }
  }, 90_000);
});

for (const [name, make] of [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `prio${++n}` })],
] as Array<[string, () => Store]>) {
  describe(`priorities with one worker loop: ${name}`, () => {
    it("tasks of one lane start highest priority first, equal priorities in enqueue order", async () => {
      const order: string[] = [];
      const agent = defineAgent({
        name: "p", instructions: "x",
        model: scriptedModel((ctx) => (order.push(ctx.agentId), { text: "ok" })),
      });
      const store = make();
      const gh = createGatehouse({ agents: [agent], store, concurrency: 1 });
      const tasks: Array<[string, number]> = [["low1", 0], ["mid", 60], ["top", 3_600], ["low2", 0], ["high", 600]];
      for (const [id, priority] of tasks) {
        const res = await gh.fetch(new Request(`http://gh.test/v1/agents/${id}/tasks`, {
          method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "p", input: "x", priority }),
        }));
        expect(res.status).toBe(202);
      }
      while (order.length < tasks.length) if ((await gh.drain()) === 0) break;
      expect(order).toEqual(["top", "high", "mid", "low1", "low2"]);
      await gh.close();
    }, 60_000);
  });
}

describe("the 40-and-1 case: one tenant's backlog does not hold another's task behind it", () => {
  it("4 loops, one-second turns: B's task starts before one wave of A's turns has ended", async () => {
    const store = redisStore({ url: server.url, prefix: `fair${++n}` });
    const agent = defineAgent({
      name: "t", instructions: "x",
      model: scriptedModel(async () => (await sleep(1_000), { text: "ok" })),
    });
    const gh = createGatehouse({ agents: [agent], store, concurrency: 4, pollMs: 20 });
    const post = (id: string, key: string) =>
      gh.fetch(new Request(`http://gh.test/v1/agents/${id}/tasks`, {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "t", input: "x", concurrencyKey: key }),
      }));
    try {
      gh.startWorker();
      const a = Array.from({ length: 40 }, (_, i) => `A${i}`);
      for (const id of a) expect((await post(id, "tenant:A")).status).toBe(202);
      const bPosted = Date.now();
      expect((await post("B", "tenant:B")).status).toBe(202);
      const ids = [...a, "B"];
      const end = Date.now() + 120_000;
      const doneOf = async (id: string) => (await store.getAgent(id))?.state === "done";
      while (Date.now() < end && !(await Promise.all(ids.map(doneOf))).every(Boolean)) await sleep(100);
      const startOf = async (id: string) => {
        const events = await store.readEvents(id, 0, 1_000);
        const started = events.find((e) => (e.data as { event?: { type?: string } }).event?.type === "TASK_STARTED");
        const ended = events.find((e) => e.type === "task");
        // When the claim started the turn (the machine event's `at`): the event itself is stored with the
        // turn's first commit, after the first model step (store/port.ts invariant `turn-start`).
        return { start: (started?.data as { event?: { at?: number } } | undefined)?.event?.at ?? NaN, end: ended?.at ?? NaN };
      };
      const b = await startOf("B");
      const as = await Promise.all(a.map(startOf));
      expect(Number.isFinite(b.start)).toBe(true);
      expect(as.every((x) => Number.isFinite(x.start) && Number.isFinite(x.end))).toBe(true);
      const endedBefore = as.filter((x) => x.end <= b.start).length;
      const startedBefore = as.filter((x) => x.start < b.start).length;
      console.log(`40-and-1: B waited ${b.start - bPosted} ms; A turns started before B ${startedBefore}, ended before B ${endedBefore} (first-come-first-served: 40)`);
      expect(endedBefore).toBeLessThanOrEqual(4);
      expect(startedBefore).toBeLessThanOrEqual(8);
    } finally {
      await gh.close();
    }
  }, 180_000);
});
