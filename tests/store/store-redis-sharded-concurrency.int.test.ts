/**
 * The concurrency conformance cases (tests/store/store-conformance-concurrency.ts: limits kept
 * across homes, parked lanes rung by a release, a crashed holder's slot, renewals, chaining, usage,
 * the seeded never-over-the-limit property) on the sharded layout on one redis-server,
 * `redisStore({ shards: 4 })`: the key layout of a Redis Cluster, where each concurrency key is
 * counted in its own slot (store/script/key-slots.ts; docs/store.md "Concurrency keys and lanes").
 * Two store objects share the data, as two processes would.
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

describe("a crash between the calls of a counted claim (sharded layout)", () => {
  const T0 = 1_700_000_000_000;
  const LEASE = 10_000;
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
});
