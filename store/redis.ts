/**
 * redisStore(): the store on a Redis server over TCP, for long-running Node
 * and Deno workers. Every operation is one Lua script (store/lua/), sent with
 * EVALSHA and falling back to EVAL on NOSCRIPT: one round trip per claim, per
 * commit and per read.
 *
 * The client is ioredis: it reconnects on its own and queues commands while
 * offline, speaks Redis Cluster and Sentinel, pipelines concurrent commands
 * on one connection, and is the most used Redis client for Node. Standalone
 * Redis (and Sentinel) is supported; a Cluster client is refused (see
 * docs/store.md, "Redis Cluster").
 *
 * @example
 * const store = redisStore("redis://127.0.0.1:6379");
 * await store.checkEviction(); // fail at startup, not at the first task
 * const gh = createGatehouse({ agents, store });
 */
import { Cluster, Redis } from "ioredis";
import { keySpace, StoreInputError } from "./keys.ts";
import { type ScriptStore, scriptStore } from "./lua-store.ts";
import { assertNoEviction, scriptRunner } from "./script-runner.ts";

export interface RedisStoreOptions {
  /** `redis://` or `rediss://` URL; the store opens (and closes) its own client. */
  url?: string;
  /** An existing ioredis client; the store does not close it. */
  client?: Redis;
  /** Key prefix (default `gh`), so several deployments can share one Redis. */
  prefix?: string;
  /** Accept a maxmemory-policy that may evict keys (default false). */
  allowEviction?: boolean;
  /**
   * Connection errors of an owned client (it reconnects on its own and
   * queues commands meanwhile; a command that fails still rejects). Default:
   * ignored here, since the failing operations surface them to the worker.
   */
  onError?: (err: Error) => void;
  /**
   * Receives `store_reconnecting` ({ delayMs, error }) when the connection is
   * lost and ioredis schedules a reconnect, and `store_ready` ({ downMs })
   * when it is back (docs/operations.md). A `Logger` of actors/runtime.ts fits.
   */
  logger?: StoreLogger;
}

/** What the adapter needs of a logger. */
export interface StoreLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
}

export function redisStore(opts: string | RedisStoreOptions): ScriptStore {
  const o: RedisStoreOptions = typeof opts === "string" ? { url: opts } : opts;
  if ((o.client as unknown) instanceof Cluster) {
    throw new StoreInputError("redisStore does not run on Redis Cluster yet: the ready and deadline indexes span slots (docs/store.md)");
  }
  if (!o.client && !o.url) throw new StoreInputError("redisStore needs a url or an ioredis client");
  const owned = !o.client;
  // No auto-pipelining: commands are still written without waiting for earlier replies (Redis
  // pipelining), but at once instead of batched until the next setImmediate, which delays every
  // round trip by a turn of a busy event loop (about +35 % steps/s at 100 agents without it).
  const client = o.client ?? new Redis(o.url!, { enableAutoPipelining: false });
  // Without a listener ioredis reports every failed reconnect attempt as an unhandled error event.
  if (owned) client.on("error", o.onError ?? (() => {}));
  if (o.logger) watchConnection(client, o.logger);

  const run = scriptRunner({
    evalsha: (sha, keys, args) => client.evalsha(sha, keys.length, ...keys, ...args),
    eval: (source, keys, args) => client.eval(source, keys.length, ...keys, ...args),
  });

  return scriptStore({
    kind: "redis",
    keys: keySpace(o.prefix),
    run,
    async checkEviction() {
      let policy: string | null = null;
      try {
        const reply = (await client.config("GET", "maxmemory-policy")) as string[];
        policy = reply[1] ?? null;
      } catch (err) {
        // A server that refuses CONFIG (managed Redis) cannot be checked; anything else is an outage.
        if ((err as Error).name !== "ReplyError") throw err;
      }
      assertNoEviction(policy, o.allowEviction ?? false);
      return { policy };
    },
    async scan(cursor, pattern) {
      const [next, batch] = await client.scan(cursor, "MATCH", pattern, "COUNT", 500);
      return [String(next), batch];
    },
    async close() {
      if (owned) await client.quit().catch(() => client.disconnect());
    },
  });
}

/** Logs the reconnects of a client: one line when a reconnect is scheduled, one when it is back. */
function watchConnection(client: Redis, logger: StoreLogger): void {
  let lastError = "";
  let downSince: number | null = null;
  client.on("error", (err: Error) => {
    lastError = err.message;
  });
  client.on("close", () => {
    // A server that went away cleanly (or was killed) closes the socket without an error event.
    lastError ||= "connection closed";
  });
  client.on("reconnecting", (delayMs: number) => {
    downSince ??= Date.now();
    logger.info("store_reconnecting", { delayMs, error: lastError });
  });
  client.on("ready", () => {
    lastError = "";
    if (downSince === null) return;
    logger.info("store_ready", { downMs: Date.now() - downSince });
    downSince = null;
  });
}
