/**
 * upstashStore(): the store on Upstash Redis over its REST API, for edge
 * runtimes (Workers, Deno Deploy, Vercel). Web APIs only (fetch). The same
 * Lua scripts as redisStore() run through the same EVALSHA/EVAL path; every
 * operation is one script call, so one billed command.
 *
 * The client is created with automatic deserialization off, so script
 * replies arrive as the strings the scripts returned. A client passed in may
 * keep it on: every script reply starts with a status word that is not JSON,
 * so it passes through unparsed either way.
 *
 * Any client of the package works, whichever entry built it
 * (`@upstash/redis`, `@upstash/redis/cloudflare`, `@upstash/redis/fastly`):
 * each entry has its own `Redis` class, so a client is recognised by its
 * methods (`UpstashClient`), not by `instanceof`. Built from url and token,
 * the client comes from the `cloudflare` entry when running in workerd: the
 * default entry sends `cache: "no-store"`, which Workers refuse before
 * compatibility date 2024-11-11 (every command would fail).
 *
 * @example
 * const store = upstashStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN });
 * const gh = createGatehouse({ agents, store });
 */
import { Redis } from "@upstash/redis";
import { Redis as WorkersRedis } from "@upstash/redis/cloudflare";
import { onWorkers } from "../common/runtime.ts";
import { keySpace, StoreInputError } from "./keys.ts";
import { type ScriptStore, scriptStore } from "./lua-store.ts";
import { assertNoEviction, scriptRunner } from "./script-runner.ts";
import { type UpstashLiveClient, upstashLive } from "./upstash-live.ts";

/** What the store needs of an @upstash/redis client (any of the package's entries). */
export type UpstashClient = Pick<Redis, "evalsha" | "eval" | "exec">;

function isClient(v: unknown): v is UpstashClient {
  const c = v as Partial<Record<keyof UpstashClient, unknown>> | null;
  return !!c && typeof c === "object" && typeof c.evalsha === "function" && typeof c.eval === "function" &&
    typeof c.exec === "function";
}

export interface UpstashStoreOptions {
  /** REST URL (`UPSTASH_REDIS_REST_URL`). */
  url?: string;
  /** REST token (`UPSTASH_REDIS_REST_TOKEN`). */
  token?: string;
  /** An existing @upstash/redis client (`@upstash/redis` or `@upstash/redis/cloudflare`) instead of url and token. */
  redis?: UpstashClient;
  /** Key prefix (default `gh`). */
  prefix?: string;
  /** Accept a maxmemory-policy that may evict keys (default false). */
  allowEviction?: boolean;
  /** Retries of a request that failed on the network (default: the client's, 5). */
  retries?: number;
}

export function upstashStore(opts: UpstashStoreOptions | UpstashClient): ScriptStore {
  if (!opts || typeof opts !== "object") throw new StoreInputError("upstashStore needs { url, token } or an @upstash/redis client");
  const o: UpstashStoreOptions = isClient(opts) ? { redis: opts } : opts as UpstashStoreOptions;
  let redis = o.redis;
  if (redis !== undefined && !isClient(redis)) {
    throw new StoreInputError("upstashStore: `redis` must be an @upstash/redis client (evalsha, eval and exec)");
  }
  if (!redis) {
    if (!o.url || !o.token) throw new StoreInputError("upstashStore needs { url, token } or an @upstash/redis client");
    const Client = onWorkers() ? WorkersRedis : Redis;
    redis = new Client({
      url: o.url,
      token: o.token,
      automaticDeserialization: false,
      enableTelemetry: false,
      ...(o.retries !== undefined ? { retry: { retries: o.retries } } : {}),
    });
  }
  const client = redis;

  const run = scriptRunner({
    evalsha: (sha, keys, args) => client.evalsha(sha, keys, args),
    eval: (source, keys, args) => client.eval(source, keys, args),
  });

  const keys = keySpace(o.prefix);
  const live = upstashLive(client as unknown as UpstashLiveClient, keys);
  return scriptStore({
    kind: "upstash",
    keys,
    run,
    live,
    async checkEviction() {
      let policy: string | null = null;
      try {
        const reply = await client.exec<unknown>(["CONFIG", "GET", "maxmemory-policy"]);
        if (Array.isArray(reply) && typeof reply[1] === "string") policy = reply[1];
      } catch (err) {
        // Upstash does not expose CONFIG (its eviction is a database setting); only a refused command is tolerated.
        if ((err as Error).name !== "UpstashError") throw err;
      }
      assertNoEviction(policy, o.allowEviction ?? false);
      return { policy };
    },
    async scan(cursor, pattern) {
      const reply = await client.exec<[string | number, string[]]>(["SCAN", cursor, "MATCH", pattern, "COUNT", "500"]);
      return [String(reply[0]), reply[1].map(String)];
    },
    async close() {
      await live.close?.();
    },
  });
}
