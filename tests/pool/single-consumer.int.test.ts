/**
 * Single-consumer targets (`svc1_<service>_<scope>`, actors/pool/target-lease.ts):
 * one consumer process at a time. In-process on the memory store and on
 * Redis (two gatehouses on one store, a hand-moved clock): the holder
 * consumes, the other waits, takes over when the holder stops (released)
 * or when its lease expires (it died), and other targets stay shared. Then
 * two real processes on Redis: one consumes while the other waits for
 * several lease lengths, the holder is killed (SIGKILL), and the other takes
 * over only after the dead one's lease has run out.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { createGatehouse, createWorkersHandler, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { manualClock } from "../helpers/clock.ts";
import { useRedisServer } from "../helpers/redis.ts";

const TARGET = "svc1_billing_test_01";
const LEASE = 1_000;

const server = useRedisServer();
let n = 0;

function twoProcesses(makeStore: () => Store) {
  const clock = manualClock();
  const ran: Array<{ proc: string; agentId: string }> = [];
  const make = (proc: string) => {
    const agent = (name: string, workerTarget: string) =>
      defineAgent({
        name, instructions: "x", workerTarget,
        model: scriptedModel((ctx) => {
          ran.push({ proc, agentId: ctx.agentId });
          return { text: "ok" };
        }),
      });
    return createGatehouse({
      agents: [agent("svc", TARGET), agent("shared", "default")],
      store: makeStore(), clock, leaseMs: LEASE, concurrency: 1,
      ids: { turnId: () => `turn_${crypto.randomUUID()}`, workerId: () => proc },
    });
  };
  const p1 = make("p1");
  const p2 = make("p2");
  let k = 0;
  const enqueue = async (agent: "svc" | "shared") => {
    const id = `${agent}-${++k}`;
    const res = await p1.fetch(new Request(`http://gh.test/v1/agents/${id}/tasks`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent, input: "x" }),
    }));
    expect(res.status).toBe(202);
    return id;
  };
  const by = (proc: string, agentId: string) => ran.some((r) => r.proc === proc && r.agentId === agentId);
  return { clock, p1, p2, enqueue, by, ran };
}

for (const [name, make] of [
  ["memory", () => { const s = memoryStore(); return () => ({ ...s, close: async () => {} }) as Store; }],
  ["redis", () => { const prefix = `svc${++n}`; return () => redisStore({ url: server.url, prefix }); }],
] as Array<[string, () => () => Store]>) {
  describe(`single-consumer targets in one process pair: ${name}`, () => {
    it("the holder consumes, the other waits; a stop releases the target, a death lets it expire", async () => {
      const w = twoProcesses(make());
      const a1 = await w.enqueue("svc");
      expect(await w.p1.drain()).toBe(1);
      expect(w.by("p1", a1)).toBe(true);
      // p2 may not consume the target while p1's lease runs, however often it tries.
      const a2 = await w.enqueue("svc");
      for (let i = 0; i < 3; i++) {
        expect(await w.p2.drain()).toBe(0);
        w.clock.advance(LEASE / 4);
      }
      expect(w.ran.some((r) => r.agentId === a2)).toBe(false);
      // Other targets are shared as before.
      const s1 = await w.enqueue("shared");
      expect(await w.p2.drain()).toBe(1);
      expect(w.by("p2", s1)).toBe(true);
      // p1 renews its lease when it claims (less than half was left).
      expect(await w.p1.drain()).toBe(1);
      expect(w.by("p1", a2)).toBe(true);
      // p1 "dies" (stops running without releasing): p2 waits until the lease ran out, then takes over.
      const a3 = await w.enqueue("svc");
      w.clock.advance(LEASE - 1);
      expect(await w.p2.drain()).toBe(0);
      w.clock.advance(1);
      expect(await w.p2.drain()).toBe(1);
      expect(w.by("p2", a3)).toBe(true);
      // Now p1 is the one that waits.
      const a4 = await w.enqueue("svc");
      expect(await w.p1.drain()).toBe(0);
      // p2 stops: it releases the target, and p1 takes over at once.
      await w.p2.close();
      expect(await w.p1.drain()).toBe(1);
      expect(w.by("p1", a4)).toBe(true);
      await w.p1.close();
    });
  });
}

describe("single-consumer targets on Workers", () => {
  it("are refused: a Worker has no process to hold the target", () => {
    const agent = defineAgent({ name: "svc", instructions: "x", workerTarget: TARGET, model: scriptedModel([{ text: "ok" }]) });
    expect(() => createWorkersHandler({ agents: [agent], store: () => memoryStore() })).toThrow(/single-consumer target "svc1_billing_test_01"/);
  });
});

// ------------------------------------------------------------------ two real processes

const SCRIPT = fileURLToPath(new URL("../helpers/svc1-process.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function spawnConsumer(name: string, env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", SCRIPT], {
    cwd: ROOT,
    env: { ...process.env, ...env, GH_SVC1_NAME: name },
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

describe("single-consumer targets across two processes (Redis)", () => {
  it("one process consumes while the other waits; killed, the other takes over after its lease ran out", async () => {
    const prefix = `svcp${++n}`;
    const sideKey = `${prefix}:side`;
    const lease = 1_500;
    const env = {
      GH_SVC1_REDIS_URL: server.url, GH_SVC1_PREFIX: prefix, GH_SVC1_TARGET: TARGET, GH_SVC1_SIDE_KEY: sideKey,
      GH_SVC1_LEASE_MS: String(lease),
    };
    const raw = new Redis(server.url);
    const store = redisStore({ url: server.url, prefix });
    const first = spawnConsumer("first", env);
    const second = spawnConsumer("second", env);
    try {
      await first.ready;
      await second.ready;
      const enqueue = (id: string) =>
        store.enqueueTask({ agentId: id, agentName: "svc", workerTarget: TARGET, input: "x", options: {}, turnId: `t_${id}`, now: Date.now() });
      const records = async () => ((await raw.lrange(sideKey, 0, -1)) as string[]).map((s) => JSON.parse(s) as { worker: string; agentId: string; at: number });
      const waitFor = async (pred: (r: Awaited<ReturnType<typeof records>>) => boolean, ms: number) => {
        const end = Date.now() + ms;
        while (Date.now() < end) {
          const r = await records();
          if (pred(r)) return r;
          await new Promise((res) => setTimeout(res, 25));
        }
        throw new Error(`timed out; records: ${JSON.stringify(await records())}`);
      };
      // Tasks over three lease lengths: every one is run by the same process.
      for (let i = 0; i < 12; i++) {
        await enqueue(`a${i}`);
        await new Promise((res) => setTimeout(res, lease / 4));
      }
      const before = await waitFor((r) => r.length >= 12, 10_000);
      const holder = before[0].worker;
      expect(before.map((r) => r.worker)).toEqual(Array(12).fill(holder));
      const [untilText, leaseHolder] = ((await raw.get(`${prefix}:lease:${TARGET}`)) ?? "").split("\n");
      expect(leaseHolder).toBe(holder);
      // Kill the holder without a chance to release.
      const [dead, alive] = holder === "first" ? [first, second] : [second, first];
      const otherName = holder === "first" ? "second" : "first";
      const lastRenewal = Number(untilText) - lease;
      dead.child.kill("SIGKILL");
      await dead.exited;
      const killedAt = Date.now();
      await enqueue("after-kill");
      const after = await waitFor((r) => r.some((x) => x.agentId === "after-kill"), 10_000);
      const took = after.find((x) => x.agentId === "after-kill")!;
      expect(took.worker).toBe(otherName);
      // Not before the dead process's lease ran out (at least one lease after a renewal it made before dying).
      expect(took.at).toBeGreaterThanOrEqual(lastRenewal + lease);
      expect(took.at - killedAt).toBeLessThan(lease + 3_000);
      expect(((await raw.get(`${prefix}:lease:${TARGET}`)) ?? "").split("\n")[1]).toBe(otherName);
      alive.child.kill("SIGTERM");
      await alive.exited;
      // A stop releases the target.
      expect(await raw.get(`${prefix}:lease:${TARGET}`)).toBeNull();
    } finally {
      for (const p of [first, second]) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
      raw.disconnect();
      await store.close();
    }
  }, 60_000);
});
