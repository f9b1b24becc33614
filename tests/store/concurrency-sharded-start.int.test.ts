/**
 * Concurrency limits on the sharded layout at startup (store/port.ts invariant
 * `concurrency-keys`, `keepsConcurrencyLimits`; docs/limits.md): every layout keeps limits
 * (the sharded one counts each key in its own slot, store/script/key-slots.ts), so
 * `createGatehouse` accepts them on `redisStore({ shards })` and from the environment. The
 * sharded layout is the real one: `redisStore({ shards })` on one redis-server lays keys out as
 * on a Cluster (docs/store.md). A store that says it cannot keep them is still refused, naming
 * the field.
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

describe("concurrencyLimits at startup", () => {
  it("every layout reports it keeps limits: sharded, one shard, unsharded", async () => {
    const sharded = redisStore({ url: server.url, prefix: freshPrefix(), shards: 4 });
    const one = redisStore({ url: server.url, prefix: freshPrefix(), shards: 1 });
    const plain = redisStore({ url: server.url, prefix: freshPrefix() });
    expect(sharded.keepsConcurrencyLimits).toBe(true);
    expect(one.keepsConcurrencyLimits).toBe(true);
    expect(plain.keepsConcurrencyLimits).toBe(true);
    await Promise.all([sharded.close(), one.close(), plain.close()]);
  });

  it("createGatehouse accepts limits on the sharded layout, and its claims keep them across homes", async () => {
    const store = redisStore({ url: server.url, prefix: freshPrefix(), shards: 4 });
    expect(() => createGatehouse({ agents: [agent], store, concurrencyLimits: { "user:42": 1, "*": 10 } })).not.toThrow();
    for (const agentId of ["x1", "x2", "x3"]) {
      await store.enqueueTask({ agentId, agentName: "a", workerTarget: "default", input: null, options: {}, turnId: `t_${agentId}`, now: 1, concurrencyKey: "user:42" });
    }
    const limits = { "user:42": 1 };
    const first = await store.claimNext({ workerTarget: "default", workerId: "w1", leaseMs: 1_000, now: 2, concurrencyLimits: limits });
    expect(first.status).toBe("claimed");
    expect((await store.claimNext({ workerTarget: "default", workerId: "w2", leaseMs: 1_000, now: 3, concurrencyLimits: limits })).status).toBe("empty");
    await store.close();
  });

  it("a store that says it cannot keep limits is refused non-empty ones, naming concurrencyLimits; none or empty ones start", async () => {
    const base = redisStore({ url: server.url, prefix: freshPrefix(), shards: 4 });
    const store: Store = { ...base, keepsConcurrencyLimits: false };
    let err: unknown;
    try {
      createGatehouse({ agents: [agent], store, concurrencyLimits: { "*": 10 } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DefinitionError);
    expect((err as DefinitionError).key).toBe("concurrencyLimits");
    expect((err as DefinitionError).message).toMatch(/^createGatehouse\(\): concurrencyLimits cannot be kept by this store/);
    expect(() => createGatehouse({ agents: [agent], store })).not.toThrow();
    expect(() => createGatehouse({ agents: [agent], store, concurrencyLimits: {} })).not.toThrow();
    await base.close();
  });

  it("the environment's configuration starts on the sharded layout with limits (GATEHOUSE_REDIS_SHARDS with GATEHOUSE_CONCURRENCY_LIMITS)", async () => {
    const env = {
      GATEHOUSE_REDIS_URL: server.url,
      GATEHOUSE_REDIS_PREFIX: freshPrefix(),
      GATEHOUSE_REDIS_SHARDS: "4",
      GATEHOUSE_CONCURRENCY_LIMITS: '{"tenant:a": 1}',
    };
    const config = configFromEnv(env);
    const store = await storeFromEnv(env, { redis: redisStore });
    try {
      expect(config.gatehouse.concurrencyLimits).toEqual({ "tenant:a": 1 });
      expect(() => createGatehouse({ ...config.gatehouse, agents: [agent], store })).not.toThrow();
    } finally {
      await store.close();
    }
  });
});
