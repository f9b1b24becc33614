/**
 * The concurrency conformance cases (tests/store/store-conformance-concurrency.ts: limits kept
 * across homes, parked lanes rung by a release, a crashed holder's slot, renewals, chaining, usage,
 * the seeded never-over-the-limit property) on the sharded layout on one redis-server,
 * `redisStore({ shards: 4 })`: the key layout of a Redis Cluster, where each concurrency key is
 * counted in its own slot (store/script/key-slots.ts; docs/store.md "Concurrency keys and lanes").
 * Two store objects share the data, as two processes would. Beside them: renewals from another store
 * object, rings across targets, and crashes between the calls of a claim or a release.
 */
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { redisStore } from "../../redis.ts";
import { keySpace } from "../../store/keys.ts";
import type { Store } from "../../store/port.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { concurrencyConformance } from "./store-conformance-concurrency.ts";

const server = useRedisServer();
let n = 0;

describe("concurrency conformance: redis, sharded layout (4 homes)", () => {
  let store: Store;
  let prefix: string;
  let extra: Store[] = [];
  beforeEach(() => {
    prefix = `shc${++n}_${Math.random().toString(36).slice(2, 8)}`;
    store = redisStore({ url: server.url, prefix, shards: 4 });
    extra = [];
  });
  afterEach(async () => {
    for (const s of extra) await s.close();
    await store.close();
  });
  const clients = async (k: number) => {
    const out = [store];
    for (let i = 1; i < k; i++) {
      const s = redisStore({ url: server.url, prefix, shards: 4 });
      extra.push(s);
      out.push(s);
    }
    return out;
  };
  concurrencyConformance(() => ({ store, clients, sharded: true }), true);
});

const T0 = 1_700_000_000_000;
const LEASE = 10_000;

describe("a key's count in its own slot (sharded layout): renewals from another store object, rings across targets", () => {
  const open = (prefix: string) => redisStore({ url: server.url, prefix, shards: 4 });
  const task = (agentId: string, workerTarget = "default") =>
    ({ agentId, agentName: "calc", workerTarget, input: null, options: {}, turnId: `t_${agentId}`, now: T0, concurrencyKey: "K" });
  const limits = { K: 1 };

  it("a renewal or a lease-keeping commit by a store that did not claim renews the reservation first (the home names it)", async () => {
    const prefix = `shr${++n}_${Math.random().toString(36).slice(2, 8)}`;
    const [s1, s2] = [open(prefix), open(prefix)];
    try {
      await s1.enqueueTask(task("a1"));
      await s1.enqueueTask(task("a2"));
      const c = await s1.claimNext({ workerTarget: "default", workerId: "w1", leaseMs: LEASE, now: T0 + 1, concurrencyLimits: limits });
      if (c.status !== "claimed") throw new Error(`expected claimed, got ${c.status}`);
      const rn = await s2.renewLease({ agentId: c.agentId, workerId: "w1", epoch: c.epoch, leaseMs: LEASE, now: T0 + LEASE - 1 });
      expect(rn).toEqual({ status: "renewed", leaseUntil: T0 + 2 * LEASE - 1 });
      // Past the first lease end the slot is still held: the other agent waits.
      expect((await s1.claimNext({ workerTarget: "default", workerId: "w2", leaseMs: LEASE, now: T0 + LEASE + 5, concurrencyLimits: limits })).status).toBe("empty");
      const kept = await s2.commit({
        agentId: c.agentId, workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId: c.head.activeTurnId,
        snapshot: null, state: "running", activeTurnId: c.head.activeTurnId, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [],
        ackMailThrough: 0, release: null, leaseMs: LEASE, now: T0 + 2 * LEASE - 2,
      });
      expect(kept.status).toBe("applied");
      expect((await s1.claimNext({ workerTarget: "default", workerId: "w2", leaseMs: LEASE, now: T0 + 2 * LEASE + 5, concurrencyLimits: limits })).status).toBe("empty");
    } finally {
      await Promise.all([s1.close(), s2.close()]);
    }
  });

  it("a release rings the key's waiting lanes in every target and home, at once", async () => {
    const prefix = `sht${++n}_${Math.random().toString(36).slice(2, 8)}`;
    const store = open(prefix);
    try {
      await store.enqueueTask(task("a1", "ta"));
      await store.enqueueTask(task("b1", "tb"));
      const c = await store.claimNext({ workerTarget: "ta", workerId: "w1", leaseMs: LEASE, now: T0 + 1, concurrencyLimits: limits });
      if (c.status !== "claimed") throw new Error(`expected claimed, got ${c.status}`);
      expect((await store.claimNext({ workerTarget: "tb", workerId: "w2", leaseMs: LEASE, now: T0 + 2, concurrencyLimits: limits })).status).toBe("empty");
      expect(await store.nextReadyAt("tb")).toBe(T0 + 1 + LEASE);
      await store.commit({
        agentId: c.agentId, workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId: c.head.activeTurnId,
        snapshot: null, state: "done", activeTurnId: null, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [],
        ackMailThrough: 0, release: { runnableAt: null }, leaseMs: LEASE, now: T0 + 3,
      });
      expect(await store.nextReadyAt("tb")).toBeLessThanOrEqual(T0 + 3);
      const b = await store.claimNext({ workerTarget: "tb", workerId: "w2", leaseMs: LEASE, now: T0 + 4, concurrencyLimits: limits });
      expect(b.status === "claimed" && b.agentId).toBe("b1");
    } finally {
      await store.close();
    }
  });
});

describe("a crash between the calls of a counted claim (sharded layout)", () => {
  it("a reservation whose home claim never came holds its slot until its lease end, then the waiting lane takes it", async () => {
    const prefix = `shx${++n}_${Math.random().toString(36).slice(2, 8)}`;
    const store = redisStore({ url: server.url, prefix, shards: 4 });
    const raw = new Redis(server.url);
    try {
      const ks = keySpace(prefix, { shards: 4 });
      await store.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "default", input: null, options: {}, turnId: "t1", now: T0, concurrencyKey: "K" });
      // A process reserved K's one slot at T0 (its lease to T0 + LEASE) and died before its home's claim.
      await raw.zadd(ks.keySlot("K").running, T0 + LEASE, `${ks.shards[0].ready("default")}\nlost`);
      const limits = { K: 1 };
      const claim = (now: number) => store.claimNext({ workerTarget: "default", workerId: "w1", leaseMs: LEASE, now, concurrencyLimits: limits });
      expect((await claim(T0 + 1)).status).toBe("empty");
      // The lane waits for the slot: parked until the reservation runs out, not polled before.
      expect(await store.nextReadyAt("default")).toBe(T0 + LEASE);
      expect((await claim(T0 + LEASE - 1)).status).toBe("empty");
      const c = await claim(T0 + LEASE + 1);
      expect(c.status === "claimed" && c.agentId).toBe("a1");
      expect(await raw.zrange(ks.keySlot("K").running, 0, -1)).toHaveLength(1);
    } finally {
      raw.disconnect();
      await store.close();
    }
  });

  it("a release the home made whose release in the key's slot never came holds the slot until its lease end, never longer", async () => {
    const prefix = `shy${++n}_${Math.random().toString(36).slice(2, 8)}`;
    const store = redisStore({ url: server.url, prefix, shards: 4 });
    const raw = new Redis(server.url);
    try {
      const ks = keySpace(prefix, { shards: 4 });
      for (const agentId of ["a1", "a2"]) {
        await store.enqueueTask({ agentId, agentName: "calc", workerTarget: "default", input: null, options: {}, turnId: `t_${agentId}`, now: T0, concurrencyKey: "K" });
      }
      const limits = { K: 1 };
      const claim = (now: number) => store.claimNext({ workerTarget: "default", workerId: "w1", leaseMs: LEASE, now, concurrencyLimits: limits });
      const c = await claim(T0 + 1);
      if (c.status !== "claimed") throw new Error(`expected claimed, got ${c.status}`);
      // The process dies between the two calls of the release: the home forgets the reservation, K's slot keeps it.
      await raw.hset(ks.agent(c.agentId).head, "_ckRun", "K");
      const end = await store.commit({
        agentId: c.agentId, workerId: "w1", epoch: c.epoch, expectedVersion: c.head.version, turnId: c.head.activeTurnId,
        snapshot: null, state: "done", activeTurnId: null, events: [], messages: [], recordToolCalls: [], resolveToolCalls: [],
        ackMailThrough: 0, release: { runnableAt: null }, leaseMs: LEASE, now: T0 + 2,
      });
      expect(end.status).toBe("applied");
      expect(await raw.zcard(ks.keySlot("K").running)).toBe(1);
      expect((await claim(T0 + 3)).status).toBe("empty");
      const next = await claim(T0 + 1 + LEASE + 1);
      expect(next.status === "claimed" && next.agentId).toBe(c.agentId === "a1" ? "a2" : "a1");
    } finally {
      raw.disconnect();
      await store.close();
    }
  });
});
