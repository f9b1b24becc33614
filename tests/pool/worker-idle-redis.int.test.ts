/**
 * Idle worker pool on TCP Redis (actors/pool/pool.ts, "Pushed bells"): the
 * store pushes every new earliest ready score (store/lua/includes/keys.lua,
 * `set_bell`; store/redis.ts, `watchBells`), so an idle pool makes no store
 * call while nothing is due, yet hears a bell rung by another process at
 * once, and a due time written by another process is kept. Real
 * redis-server; "another process" is a second store object on the same
 * prefix, which shares nothing in-process with the pool.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Redis } from "ioredis";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";
import type { Gatehouse, GatehouseOptions, Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { commandStats, diffStats } from "../../bench/redis-info.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { callCounting } from "../helpers/call-counting.ts";
import { jsonRequest } from "../helpers/http.ts";

const quick = defineAgent({
  name: "quick",
  instructions: "answer at once",
  model: scriptedModel(() => ({ toolCalls: [{ name: "submit_result", args: { result: { ok: true } } }] })),
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const post = (path: string, body: unknown) => jsonRequest("POST", path, body, {}, "http://g");

async function stateOf(g: Gatehouse, id: string): Promise<string> {
  return ((await (await g.fetch(new Request(`http://g/v1/agents/${id}`))).json()) as { state: string }).state;
}
/** Ms until the agent is in `state` (polled through the routes of `g`), or throws after `limitMs`. */
async function until(g: Gatehouse, id: string, state: string, limitMs: number): Promise<number> {
  const t0 = Date.now();
  while (Date.now() - t0 < limitMs) {
    if ((await stateOf(g, id)) === state) return Date.now() - t0;
    await sleep(5);
  }
  throw new Error(`Cannot see agent "${id}" ${state}: not within ${limitMs} ms`);
}

const redis = useRedisServer();
let admin: Redis;
let n = 0;
const open: Array<{ g: Gatehouse; store: Store }> = [];

beforeAll(async () => {
  admin = new Redis(redis.url, { lazyConnect: false });
  admin.on("error", () => {});
});
afterAll(async () => {
  admin.disconnect();
});
afterEach(async () => {
  for (const { g, store } of open.splice(0)) {
    await g.stopWorker();
    await store.close();
  }
});

/** A worker process (the pool under test) and an HTTP-only process (the other one), on one fresh prefix. */
function pair(opts: Partial<GatehouseOptions> = {}) {
  const prefix = `idle${++n}`;
  const c = callCounting(redisStore({ url: redis.url, prefix }));
  const worker = createGatehouse({ agents: [quick], store: c.store, ...opts });
  const otherStore = redisStore({ url: redis.url, prefix });
  const other = createGatehouse({ agents: [quick], store: otherStore });
  open.push({ g: worker, store: c.store }, { g: other, store: otherStore });
  return { worker, other, otherStore, calls: c.calls, prefix };
}

/** Subscribers of the pool's ready queue channel (the bell watch). */
async function listeners(prefix: string): Promise<number> {
  const reply = (await admin.call("PUBSUB", "NUMSUB", `${prefix}:ready:default`)) as [string, number];
  return Number(reply[1]);
}
/** Waits until the bell watch is subscribed (at most `limitMs`: what follows then tells what a pool without one does). */
async function listening(prefix: string, limitMs = 1_000): Promise<void> {
  const t0 = Date.now();
  while ((await listeners(prefix)) !== 1 && Date.now() - t0 < limitMs) await sleep(10);
  await sleep(50); // the pool's poll after it listens
}

describe("idle worker pool on TCP Redis (pushed bells)", () => {
  it("a bell rung by another process wakes the pool at once, though its poll interval is 2 s", async () => {
    const { worker, other, prefix } = pair({ pollMs: 2_000, idlePollMaxMs: 60_000 });
    worker.startWorker();
    await listening(prefix);
    const r = await other.fetch(post("/v1/agents/a1/tasks", { agent: "quick", input: "x" }));
    expect(r.status).toBe(202);
    const ms = await until(worker, "a1", "done", 1_900);
    // Claimed and run within a few round trips (a poll would come 1.5-2 s later).
    expect(ms).toBeLessThan(500);
  });

  it("makes no store call and sends Redis no command while idle at the pool's defaults (the watchdog held off)", async () => {
    const { worker, calls, prefix } = pair({ watchdogIntervalMs: 60_000 });
    worker.startWorker();
    await listening(prefix);
    const before = { ...calls };
    const s0 = await commandStats(admin);
    await sleep(3_000);
    const s1 = await commandStats(admin);
    const delta = diffStats(s0, s1);
    expect(calls).toEqual(before);
    // Only the measuring connection's own reads remain (INFO is left out by diffStats).
    expect(delta.totalCalls).toBe(0);
  });

  it("a lease end written by another process after the pool went to sleep is kept (takeover of a dead worker)", async () => {
    const { worker, other, otherStore, prefix } = pair({ pollMs: 5_000, idlePollMaxMs: 60_000 });
    expect((await other.fetch(post("/v1/agents/dead1/tasks", { agent: "quick", input: "x" }))).status).toBe(202);
    const c = await otherStore.claim({ agentId: "dead1", workerId: "dead", leaseMs: 30_000, now: Date.now() });
    expect(c.status).toBe("claimed");
    worker.startWorker();
    await listening(prefix);
    await sleep(300);
    expect(await stateOf(worker, "dead1")).not.toBe("done");
    // The dead worker's last renewal moves its lease end 30 s earlier: a new earliest due time.
    const epoch = (c as { epoch: number }).epoch;
    const renewed = await otherStore.renewLease({ agentId: "dead1", workerId: "dead", epoch, leaseMs: 500, now: Date.now() });
    expect(renewed.status).toBe("renewed");
    const ms = await until(worker, "dead1", "done", 7_000);
    expect(ms).toBeGreaterThanOrEqual(400);
    expect(ms).toBeLessThan(1_200);
  }, 10_000);

  it("a user that may not use channels: every script still writes its bell, the watch never listens, the pool polls", async () => {
    await admin.call("ACL", "SETUSER", "nochan", "on", ">pw", "~*", "+@all", "resetchannels");
    const prefix = `idle${++n}`;
    const url = redis.url.replace("redis://", "redis://nochan:pw@");
    const logged: string[] = [];
    const store = redisStore({ url, prefix, logger: { info: (msg) => logged.push(msg) } });
    const worker = createGatehouse({ agents: [quick], store, pollMs: 20, idlePollMaxMs: 200 });
    const otherStore = redisStore({ url, prefix });
    const other = createGatehouse({ agents: [quick], store: otherStore });
    open.push({ g: worker, store }, { g: other, store: otherStore });
    worker.startWorker();
    await sleep(300);
    expect(await listeners(prefix)).toBe(0);
    expect(logged).toContain("store_bells_polled");
    expect((await other.fetch(post("/v1/agents/p1/tasks", { agent: "quick", input: "x" }))).status).toBe(202);
    await until(worker, "p1", "done", 2_000);
  });

  it("stop() during the wait returns at once and closes the watch", async () => {
    const { worker, prefix } = pair({ pollMs: 2_000 });
    worker.startWorker();
    await listening(prefix);
    const t0 = Date.now();
    await worker.stopWorker();
    expect(Date.now() - t0).toBeLessThan(200);
    // The watch's connection is closed (the server notices within a moment).
    const t1 = Date.now();
    while ((await listeners(prefix)) !== 0 && Date.now() - t1 < 1_000) await sleep(10);
    expect(await listeners(prefix)).toBe(0);
  });

  it("a Redis restart during the wait: the watch listens again and the pool still hears bells", async () => {
    const { worker, other, prefix } = pair({ pollMs: 2_000, idlePollMaxMs: 60_000 });
    worker.startWorker();
    await listening(prefix);
    await redis.kill("SIGKILL");
    await sleep(300);
    await redis.start();
    await listening(prefix, 5_000);
    const r = await other.fetch(post("/v1/agents/r1/tasks", { agent: "quick", input: "x" }));
    expect(r.status).toBe(202);
    const ms = await until(worker, "r1", "done", 5_000);
    expect(ms).toBeLessThan(800);
  });
});
