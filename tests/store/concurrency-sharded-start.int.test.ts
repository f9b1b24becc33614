/**
 * The start refuses concurrency limits a store cannot keep (store/port.ts invariant
 * `concurrency-keys`, `keepsConcurrencyLimits`; docs/limits.md): Redis Cluster's sharded
 * layout with more than one shard counts a key per shard, so `createGatehouse` refuses a
 * non-empty `concurrencyLimits` on it with a DefinitionError naming the field, before any
 * claim runs. The sharded layout is the real one: `redisStore({ shards })` on one
 * redis-server lays keys out as on a Cluster (docs/store.md), and its claims refuse limits.
 * One shard (one home) and the unsharded layout keep limits and are accepted.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, DefinitionError, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { configFromEnv } from "../../entry/config.ts";
import { storeFromEnv } from "../../entry/store-from-env.ts";
import type { Store } from "../../store/port.ts";
import { useRedisServer } from "../helpers/redis.ts";

const server = useRedisServer();
const agent = defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "ok" }]) });
let n = 0;
const freshPrefix = () => `css${++n}_${Math.random().toString(36).slice(2, 8)}`;

function refusal(store: Store, concurrencyLimits: Record<string, number>): DefinitionError {
  try {
    createGatehouse({ agents: [agent], store, concurrencyLimits });
  } catch (err) {
    expect(err).toBeInstanceOf(DefinitionError);
    return err as DefinitionError;
  }
  throw new Error("expected a DefinitionError");
}

describe("concurrencyLimits on a store that cannot keep them", () => {
  it("the sharded layout reports it cannot keep limits; one shard and the unsharded layout can", async () => {
    const sharded = redisStore({ url: server.url, prefix: freshPrefix(), shards: 4 });
    const one = redisStore({ url: server.url, prefix: freshPrefix(), shards: 1 });
    const plain = redisStore({ url: server.url, prefix: freshPrefix() });
    expect(sharded.keepsConcurrencyLimits).toBe(false);
    expect(one.keepsConcurrencyLimits).toBe(true);
    expect(plain.keepsConcurrencyLimits).toBe(true);
    await Promise.all([sharded.close(), one.close(), plain.close()]);
  });

  it("createGatehouse refuses non-empty limits on the sharded layout, naming concurrencyLimits, and runs nothing", async () => {
    const prefix = freshPrefix();
    const store = redisStore({ url: server.url, prefix, shards: 4 });
    for (const limits of [{ "user:42": 5 }, { "*": 10 }] as Array<Record<string, number>>) {
      const err = refusal(store, limits);
      expect(err.key).toBe("concurrencyLimits");
      expect(err.message).toMatch(/^createGatehouse\(\): concurrencyLimits cannot be kept by this store: the sharded layout/);
    }
    // Nothing was started: the store holds no agent and answers as before.
    expect(await store.listAgents({ limit: 10 })).toEqual([]);
    // Its claims still refuse limits should any reach them (the guard behind the start's).
    await expect(store.claim({ agentId: "x1", workerId: "w1", leaseMs: 1_000, now: 1, concurrencyLimits: { K: 1 } }))
      .rejects.toThrow(/sharded layout/);
    await store.close();
  });

  it("accepts the sharded layout without limits or with none named, and limits on one shard or without shards", async () => {
    const sharded = redisStore({ url: server.url, prefix: freshPrefix(), shards: 4 });
    const one = redisStore({ url: server.url, prefix: freshPrefix(), shards: 1 });
    const plain = redisStore({ url: server.url, prefix: freshPrefix() });
    const stores: Store[] = [sharded, one, plain];
    const started = [
      createGatehouse({ agents: [agent], store: sharded }),
      createGatehouse({ agents: [agent], store: sharded, concurrencyLimits: {} }),
      createGatehouse({ agents: [agent], store: one, concurrencyLimits: { "user:42": 1 } }),
      createGatehouse({ agents: [agent], store: plain, concurrencyLimits: { "*": 2 } }),
    ];
    expect(started).toHaveLength(4);
    await Promise.all(stores.map((s) => s.close()));
  });

  it("the environment's configuration is refused the same way (GATEHOUSE_REDIS_SHARDS with GATEHOUSE_CONCURRENCY_LIMITS)", async () => {
    const env = {
      GATEHOUSE_REDIS_URL: server.url,
      GATEHOUSE_REDIS_PREFIX: freshPrefix(),
      GATEHOUSE_REDIS_SHARDS: "4",
      GATEHOUSE_CONCURRENCY_LIMITS: '{"tenant:a": 1}',
    };
    const config = configFromEnv(env);
    const store = await storeFromEnv(env, { redis: redisStore });
    try {
      expect(() => createGatehouse({ ...config.gatehouse, agents: [agent], store })).toThrow(/concurrencyLimits cannot be kept by this store/);
    } finally {
      await store.close();
    }
  });
});
