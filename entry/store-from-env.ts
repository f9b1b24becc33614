/**
 * storeFromEnv(): picks the store from environment variables, for the entry
 * points. The environment comes in as a plain record (`process.env`,
 * `Deno.env.toObject()`, a Workers `env`), so this file reads no globals.
 *
 * | variables | store |
 * | --- | --- |
 * | `GATEHOUSE_REDIS_URL` | `opts.redis` (pass `redisStore` from `@gatehouse-runtime/core/redis`) |
 * | `GATEHOUSE_REDIS_CLUSTER_NODES` | `opts.redis` on a Redis Cluster: comma-separated seed nodes (`redis://host:port` or `host:port`) |
 * | `UPSTASH_REDIS_REST_URL` + `UPSTASH_REDIS_REST_TOKEN` | upstashStore (REST) |
 * | neither | memoryStore (nothing survives the process) |
 *
 * `GATEHOUSE_REDIS_PREFIX` sets the key prefix (default `gh`);
 * `GATEHOUSE_REDIS_SHARDS` the shard count of the Cluster layout (1-256,
 * default 16; on one Redis it switches to that layout, docs/store.md).
 * `GATEHOUSE_ALLOW_EVICTION=1` accepts a maxmemory-policy that may evict keys;
 * otherwise the eviction check runs here and startup fails with
 * EvictionPolicyError on `allkeys-*` / `volatile-*`. The same check compares
 * the TCP Redis's persistence with `GATEHOUSE_DURABILITY` (`fsync-always`
 * by default, `fsync-everysec`, `none`) and logs `store_durability_weaker`
 * through `opts.logger` when it keeps less (store/durability.ts); Upstash's
 * persistence is the provider's and is not read.
 *
 * Web APIs only, so `mod.ts` can export it: the TCP adapter comes in as
 * `opts.redis` (its module needs Node built-ins). Without it,
 * `GATEHOUSE_REDIS_URL` is refused with a StoreInputError that names the
 * subpath, never silently ignored.
 *
 * @example
 * import { redisStore } from "@gatehouse-runtime/core/redis";
 * const store = await storeFromEnv(process.env, { redis: redisStore });
 */
import { type Durability, isDurability } from "../store/durability.ts";
import { memoryStore } from "../store/memory.ts";
import type { Store } from "../store/port.ts";
import { StoreInputError } from "../store/keys.ts";
import type { ScriptStore } from "../store/lua-store.ts";
import { upstashStore } from "../store/upstash.ts";

export type Env = Record<string, string | undefined>;

/** What storeFromEnv needs of the TCP adapter: `redisStore` from `@gatehouse-runtime/core/redis` fits. */
export type TcpStoreFactory = (opts: {
  url?: string;
  clusterNodes?: string[];
  shards?: number;
  prefix?: string;
  allowEviction?: boolean;
  durability?: Durability;
  onError?: (err: Error) => void;
  logger?: StoreLogLines;
}) => ScriptStore;

/** The lines of the TCP adapter: `store_reconnecting` / `store_ready` (info), `store_durability_*` (warn, info). */
export interface StoreLogLines {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn?(msg: string, fields?: Record<string, unknown>): void;
}

export interface StoreFromEnvOptions {
  /** The TCP adapter for `GATEHOUSE_REDIS_URL` (`redisStore` from `@gatehouse-runtime/core/redis`). */
  redis?: TcpStoreFactory;
  /** Connection errors of the TCP client while it reconnects (default: ignored). */
  onError?: (err: Error) => void;
  /** Gets the TCP client's `store_reconnecting` / `store_ready` and `store_durability_*` lines (docs/operations.md). */
  logger?: StoreLogLines;
}

export async function storeFromEnv(env: Env, opts: StoreFromEnvOptions = {}): Promise<Store> {
  const allowEviction = env.GATEHOUSE_ALLOW_EVICTION === "1" || env.GATEHOUSE_ALLOW_EVICTION === "true";
  const prefix = env.GATEHOUSE_REDIS_PREFIX || undefined;
  const clusterNodes = env.GATEHOUSE_REDIS_CLUSTER_NODES?.split(",").map((n) => n.trim()).filter((n) => n !== "");
  const shardsRaw = env.GATEHOUSE_REDIS_SHARDS?.trim() || undefined;
  if (shardsRaw !== undefined && !/^\d{1,3}$/.test(shardsRaw)) {
    throw new StoreInputError(`GATEHOUSE_REDIS_SHARDS=${JSON.stringify(shardsRaw)} is not a shard count (1 to 256)`);
  }
  const shards = shardsRaw === undefined ? undefined : Number(shardsRaw);
  const durability = env.GATEHOUSE_DURABILITY?.trim() || undefined;
  if (durability !== undefined && !isDurability(durability)) {
    throw new StoreInputError(`GATEHOUSE_DURABILITY=${JSON.stringify(durability)} is not fsync-always, fsync-everysec or none`);
  }
  if (env.GATEHOUSE_REDIS_URL && clusterNodes?.length) {
    throw new StoreInputError("GATEHOUSE_REDIS_URL and GATEHOUSE_REDIS_CLUSTER_NODES are both set: choose one");
  }
  if (env.GATEHOUSE_REDIS_URL || clusterNodes?.length) {
    const name = env.GATEHOUSE_REDIS_URL ? "GATEHOUSE_REDIS_URL" : "GATEHOUSE_REDIS_CLUSTER_NODES";
    if (!opts.redis) {
      throw new StoreInputError(
        `${name} is set but no TCP adapter was passed: call storeFromEnv(env, { redis: redisStore }) ` +
          "with redisStore from @gatehouse-runtime/core/redis (Node, Deno, Bun), or use UPSTASH_REDIS_REST_URL on the edge",
      );
    }
    const where = env.GATEHOUSE_REDIS_URL ? { url: env.GATEHOUSE_REDIS_URL } : { clusterNodes };
    const store = opts.redis({
      ...where,
      ...(shards !== undefined ? { shards } : {}),
      ...(durability !== undefined ? { durability } : {}),
      prefix,
      allowEviction,
      onError: opts.onError,
      logger: opts.logger,
    });
    try {
      await store.checkEviction();
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }
  if (!env.UPSTASH_REDIS_REST_URL !== !env.UPSTASH_REDIS_REST_TOKEN) {
    throw new StoreInputError("UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN must be set together");
  }
  if (env.UPSTASH_REDIS_REST_URL && env.UPSTASH_REDIS_REST_TOKEN) {
    const store = upstashStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN, prefix, allowEviction });
    await store.checkEviction();
    return store;
  }
  return memoryStore();
}
