/**
 * The concurrency conformance cases (tests/store/store-conformance-concurrency.ts: limits kept
 * across homes, parked lanes rung by a release, a crashed holder's slot, renewals, chaining, usage,
 * the seeded never-over-the-limit property) on the sharded layout on one redis-server,
 * `redisStore({ shards: 4 })`: the key layout of a Redis Cluster, where each concurrency key is
 * counted in its own slot (store/script/key-slots.ts; docs/store.md "Concurrency keys and lanes").
 * Two store objects share the data, as two processes would.
 */
import { afterEach, beforeEach, describe } from "vitest";
import { redisStore } from "../../redis.ts";
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
