/**
 * Delayed tasks on Redis (store/port.ts invariant `delayed-tasks`), against a
 * real redis-server:
 * - the cost of an enqueue does not grow with the delayed tasks queued: one
 *   more enqueue (immediate, or delayed earlier than every queued one) with
 *   3,000 delayed tasks queued runs about as many Redis commands as with
 *   none. Counted, not timed: `INFO commandstats` counts every command a
 *   script runs, so the verdict does not depend on the machine's speed
 *   (the timed ratio is bench/delayed-enqueue.ts);
 * - an agent whose delayed tasks were queued in the earlier layout (in the
 *   inbox list itself, tests/fixtures/delayed-tasks-v1) is served after the
 *   change: its tasks start in join order, never early, a new immediate task
 *   starts ahead of the ones not due, a delayed task reads and cancels, its
 *   idempotency key answers, the bound counts its tasks.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisStore } from "../../redis.ts";
import type { ClaimResult, EnqueueTaskRequest, Store } from "../../store/port.ts";
import { useRedisServer } from "../helpers/redis.ts";
import fixture from "../fixtures/delayed-tasks-v1/redis.json" with { type: "json" };

const server = useRedisServer();
let raw: Redis;
let n = 0;
beforeAll(async () => {
  raw = new Redis(server.url);
});
afterAll(async () => {
  raw?.disconnect();
});

const T0 = 1_700_000_000_000;
const LEASE = 10_000;

/** Commands Redis ran since the last reset, by name (scripts' commands included), then a reset. */
async function commandsSince(): Promise<Map<string, number>> {
  const info = await raw.info("commandstats");
  await raw.config("RESETSTAT");
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}
const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

function base(agentId: string): Omit<EnqueueTaskRequest, "turnId" | "now"> {
  return { agentId, agentName: "delayer", workerTarget: "default", input: { q: 1 }, options: {} };
}

/** The commands one enqueue runs (the script's own and the call), with `queued` delayed tasks queued before it. */
async function enqueueCost(store: Store, agentId: string, queued: number, last: Partial<EnqueueTaskRequest>) {
  const b = base(agentId);
  for (let i = 0; i < queued; i++) {
    // Due in a day, later ones later: each joins at the tail, the case the walk from the tail passed over.
    await store.enqueueTask({ ...b, turnId: `q${i}`, now: T0, runAt: T0 + 86_400_000 + i });
  }
  await store.enqueueTask({ ...b, turnId: "warm", now: T0, runAt: T0 + 86_400_000 + queued });
  await commandsSince();
  const r = await store.enqueueTask({ ...b, turnId: "probe", now: T0 + 1, ...last });
  expect(r.status).toBe("enqueued");
  return commandsSince();
}

describe("delayed tasks on Redis: the cost of an enqueue", () => {
  for (const [name, last] of [
    ["an immediate task", {}],
    ["a delayed task earlier than every queued one", { runAt: T0 + 60_000 }],
  ] as const) {
    it(`${name} with 3,000 delayed tasks queued runs about the commands it runs with none`, async () => {
      const store = redisStore({ url: server.url, prefix: `dc${++n}` });
      try {
        const none = await enqueueCost(store, "empty", 0, last);
        const full = await enqueueCost(store, "full", 3_000, last);
        // The walk ran one LINDEX per queued task it passed (3,000); none may grow with the queue.
        expect(full.get("lindex") ?? 0).toBeLessThanOrEqual((none.get("lindex") ?? 0) + 2);
        expect(total(full)).toBeLessThanOrEqual(total(none) + 4);
      } finally {
        await store.close?.();
      }
    }, 120_000);
  }
});

type Dumped = { type: string; value: unknown };

/** Writes the fixture's keys back under its prefix and agent, and its bell. */
async function restore(prefix: string) {
  const tag = `${prefix}:{a:${fixture.agentId}}:`;
  for (const [suffix, { type, value }] of Object.entries(fixture.records as Record<string, Dumped>)) {
    const key = tag + suffix;
    if (type === "hash") await raw.hset(key, value as Record<string, string>);
    else if (type === "list") await raw.rpush(key, ...(value as string[]));
    else throw new Error(`fixture key ${key} has type ${type}`);
  }
  for (const [target, score] of Object.entries(fixture.ready)) await raw.zadd(`${prefix}:ready:${target}`, score, fixture.agentId);
}

describe("delayed tasks on Redis: an agent queued in the earlier layout (tests/fixtures/delayed-tasks-v1)", () => {
  const A = fixture.agentId;
  async function open() {
    const prefix = `${fixture.prefix}${++n}`;
    await restore(prefix);
    return redisStore({ url: server.url, prefix });
  }
  async function takeAll(store: Store, now: number): Promise<string[]> {
    const out: string[] = [];
    for (;;) {
      const c: ClaimResult = await store.claim({ agentId: A, workerId: "w", leaseMs: LEASE, now });
      if (c.status !== "claimed" || !c.task) return out;
      out.push(c.task.turnId);
      const r = await store.commit({
        agentId: A, workerId: "w", epoch: c.epoch, expectedVersion: c.head.version, turnId: c.task.turnId,
        activeTurnId: null, snapshot: { value: "done" }, state: "done", ackMailThrough: 0, release: { runnableAt: null },
        recordToolCalls: [], resolveToolCalls: [], messages: [], events: [], leaseMs: LEASE, now,
      });
      expect(r.status).toBe("applied");
    }
  }

  it("its tasks start in join order and never early; the bell follows them", async () => {
    const store = await open();
    expect((await store.listQueuedTasks(A, 10)).map((t) => t.turnId)).toEqual(["i1", "d1", "d3", "d2", "k1"]);
    expect(await takeAll(store, T0 + 10)).toEqual(["i1"]);
    expect(await store.nextReadyAt("default")).toBe(T0 + 1_000);
    expect(await takeAll(store, T0 + 1_000)).toEqual(["d1"]);
    expect(await takeAll(store, T0 + 5_000)).toEqual(["d3", "d2"]);
    expect(await store.nextReadyAt("default")).toBe(T0 + 9_000);
    expect(await takeAll(store, T0 + 9_000)).toEqual(["k1"]);
    expect((await store.getAgent(A))!.pendingTasks).toBe(0);
    await store.close?.();
  });

  it("a new immediate task starts ahead of the old ones not due; new delayed ones join in order; reads, cancels, keys and the bound see the old ones", async () => {
    const store = await open();
    const b = base(A);
    expect((await store.enqueueTask({ ...b, turnId: "i2", now: T0 + 2_000 })).status).toBe("enqueued");
    expect((await store.enqueueTask({ ...b, turnId: "d4", now: T0 + 2_000, runAt: T0 + 5_000 })).status).toBe("enqueued");
    expect((await store.enqueueTask({ ...b, turnId: "d0", now: T0 + 2_000, runAt: T0 + 3_000 })).status).toBe("enqueued");
    expect((await store.listQueuedTasks(A, 20)).map((t) => t.turnId)).toEqual(["i1", "d1", "i2", "d0", "d3", "d2", "d4", "k1"]);
    expect(await store.getTurn(A, "k1")).toEqual({ turnId: "k1", status: "queued", input: { n: "k1" }, runAt: T0 + 9_000 });
    expect((await store.enqueueTask({ ...b, turnId: "again", now: T0 + 2_000, runAt: T0 + 9_000, idempotencyKey: "key-d" })))
      .toEqual({ status: "duplicate", turnId: "k1" });
    // Five are not due at T0 + 2,000 (d0, d3, d2, d4, k1): a bound of 5 refuses one more.
    expect((await store.enqueueTask({ ...b, turnId: "over", now: T0 + 2_000, runAt: T0 + 4_000, maxDelayedTasks: 5 })).status)
      .toBe("too_many_delayed");
    expect(await store.cancelTask({ agentId: A, turnId: "d3", reason: "test", now: T0 + 2_000 })).toMatchObject({ status: "cancelled" });
    expect(await store.getTurn(A, "d3")).toMatchObject({ status: "cancelled" });
    expect((await store.getAgent(A))!.pendingTasks).toBe(7);
    expect(await takeAll(store, T0 + 2_000)).toEqual(["i1", "d1", "i2"]);
    expect(await takeAll(store, T0 + 9_000)).toEqual(["d0", "d2", "d4", "k1"]);
    expect((await store.getAgent(A))!.pendingTasks).toBe(0);
    await store.close?.();
  });
});
