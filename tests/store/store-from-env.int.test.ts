import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storeFromEnv } from "../../entry/store-from-env.ts";
import { redisStore } from "../../redis.ts";
import { StoreInputError } from "../../store/keys.ts";
import { EvictionPolicyError } from "../../store/script-runner.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";

const server = useRedisServer();
let bridge: UpstashBridge;
beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: server.url });
});
afterAll(async () => {
  await bridge?.close();
});

describe("storeFromEnv", () => {
  it("uses the memory store when no Redis is configured", async () => {
    const store = await storeFromEnv({});
    expect(store.kind).toBe("memory");
  });

  it("uses redisStore for GATEHOUSE_REDIS_URL, with GATEHOUSE_REDIS_PREFIX", async () => {
    const store = await storeFromEnv({ GATEHOUSE_REDIS_URL: server.url, GATEHOUSE_REDIS_PREFIX: "envtest" }, { redis: redisStore });
    expect(store.kind).toBe("redis");
    await store.enqueueTask({ agentId: "a1", agentName: "x", workerTarget: "default", input: 1, options: {}, turnId: "t1", now: 1 });
    const raw = new Redis(server.url);
    expect(await raw.exists("envtest:{a:a1}:head")).toBe(1);
    raw.disconnect();
    await store.close();
  });

  it("refuses GATEHOUSE_REDIS_URL without a TCP adapter, naming @gatehouse-runtime/core/redis (mod.ts carries no ioredis)", async () => {
    const err = await storeFromEnv({ GATEHOUSE_REDIS_URL: server.url }).catch((e) => e);
    expect(err).toBeInstanceOf(StoreInputError);
    expect((err as Error).message).toContain("@gatehouse-runtime/core/redis");
  });

  it("refuses GATEHOUSE_REDIS_CLUSTER_NODES with GATEHOUSE_REDIS_URL, without a TCP adapter, and a GATEHOUSE_REDIS_SHARDS that is not a count", async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ GATEHOUSE_REDIS_CLUSTER_NODES: "127.0.0.1:1", GATEHOUSE_REDIS_URL: server.url }, /both set/],
      [{ GATEHOUSE_REDIS_URL: server.url, GATEHOUSE_REDIS_SHARDS: "many" }, /GATEHOUSE_REDIS_SHARDS="many" is not a shard count/],
      [{ GATEHOUSE_REDIS_URL: server.url, GATEHOUSE_REDIS_SHARDS: "999" }, /1-256/],
    ];
    for (const [env, message] of cases) {
      const err = await storeFromEnv(env, { redis: redisStore }).catch((e) => e);
      expect(err, JSON.stringify(env)).toBeInstanceOf(StoreInputError);
      expect((err as Error).message).toMatch(message);
    }
    const err = await storeFromEnv({ GATEHOUSE_REDIS_CLUSTER_NODES: "127.0.0.1:1" }).catch((e) => e);
    expect(err).toBeInstanceOf(StoreInputError);
    expect((err as Error).message).toContain("GATEHOUSE_REDIS_CLUSTER_NODES is set but no TCP adapter");
  });

  it("GATEHOUSE_REDIS_SHARDS lays one Redis out in shards", async () => {
    const store = await storeFromEnv({ GATEHOUSE_REDIS_URL: server.url, GATEHOUSE_REDIS_PREFIX: "envshards", GATEHOUSE_REDIS_SHARDS: "2" }, { redis: redisStore });
    await store.enqueueTask({ agentId: "a1", agentName: "x", workerTarget: "default", input: 1, options: {}, turnId: "t1", now: 1 });
    const raw = new Redis(server.url);
    expect(await raw.get("envshards:layout")).toBe("shards=2");
    expect(await raw.exists("envshards:{a:a1}:head")).toBe(0);
    raw.disconnect();
    await store.close();
  });

  it("uses upstashStore for UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN, and refuses one without the other", async () => {
    const store = await storeFromEnv({ UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token });
    expect(store.kind).toBe("upstash");
    expect(await store.getAgent("nobody")).toBeNull();
    await expect(storeFromEnv({ UPSTASH_REDIS_REST_URL: bridge.url })).rejects.toBeInstanceOf(StoreInputError);
  });

  it("fails at startup on an evicting Redis unless GATEHOUSE_ALLOW_EVICTION=1", async () => {
    const raw = new Redis(server.url);
    await raw.config("SET", "maxmemory-policy", "allkeys-lru");
    try {
      await expect(storeFromEnv({ GATEHOUSE_REDIS_URL: server.url }, { redis: redisStore })).rejects.toBeInstanceOf(EvictionPolicyError);
      await expect(storeFromEnv({ UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token })).rejects.toBeInstanceOf(EvictionPolicyError);
      const store = await storeFromEnv({ GATEHOUSE_REDIS_URL: server.url, GATEHOUSE_ALLOW_EVICTION: "1" }, { redis: redisStore });
      expect(store.kind).toBe("redis");
      await store.close();
    } finally {
      await raw.config("SET", "maxmemory-policy", "noeviction");
      raw.disconnect();
    }
  });
});
