/**
 * redisStore(): the store on a Redis server over TCP, for long-running Node
 * and Deno workers. Every operation is one Lua script (store/lua/), sent with
 * EVALSHA and falling back to EVAL on NOSCRIPT: one round trip per claim, per
 * commit and per read.
 *
 * The client is ioredis: it reconnects on its own and queues commands while
 * offline, speaks Redis Cluster and Sentinel, pipelines concurrent commands
 * on one connection, and is the most used Redis client for Node. Standalone
 * Redis and Sentinel use the unsharded key layout; Redis Cluster (an ioredis
 * `Cluster` client, or `clusterNodes`) uses the sharded one, in which every
 * script still touches one slot (store/keys.ts; docs/store.md, "Standalone,
 * Sentinel, Upstash, and Redis Cluster").
 *
 * The script calls of one burst of microtasks (the continuations of the
 * replies one socket read brought, the claims of a woken pool) leave in one
 * socket write when the runtime can say where a burst ends (`afterBurst`,
 * Node's `process.nextTick`, given by the package's `./redis` entry,
 * redis.ts): the socket is corked at the burst's first call and uncorked
 * once the burst ran. Same calls, same order, same answers, written before
 * the event loop's next turn (unlike ioredis' auto-pipelining, which waits
 * for `setImmediate`); one system call instead of one per call
 * (tests/store/store-redis-write-burst.int.test.ts). Without `afterBurst`
 * each call is written at once.
 *
 * Bells are pushed (`watchBells`): a script that makes a new earliest ready
 * score publishes it on the channel named like the ready queue
 * (store/lua/includes/keys.lua, `set_bell`), and a watch subscribes to the
 * queues of its targets on a connection of its own, so an idle worker pool
 * waits on that connection instead of polling (actors/pool/pool.ts). On a
 * Cluster, PUBLISH reaches every node, so one subscribed connection hears
 * the queues of every shard: no connection per master, no polling. (When
 * the node holding the subscription fails, ioredis moves it to another; a
 * bell published meanwhile is found by the pool's safety poll.)
 *
 * Persistence is checked once, with the eviction policy (`checkEviction`,
 * which runs before the first operation): the server's `appendonly` and
 * `appendfsync` are compared with `durability` (store/durability.ts) and a
 * weaker server is reported by one `store_durability_weaker` line per
 * server (every master of a Cluster), never refused; a server that keeps
 * what is asked gets one `store_durability` info line with the settings it
 * checked, so a compliant start says so too. What a deployment
 * accepts to lose is its own choice. A server that refuses CONFIG (a
 * managed Redis, an ACL user without `+config`) gets one
 * `store_durability_unchecked` line. Nothing is read without a logger.
 *
 * @example
 * const store = redisStore("redis://127.0.0.1:6379");
 * await store.checkEviction(); // fail at startup, not at the first task
 * const gh = createGatehouse({ agents, store });
 *
 * // Redis Cluster: seed nodes (the client finds the others), 16 shards by default.
 * const clustered = redisStore({ clusterNodes: ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379"] });
 */
import { Cluster, Redis } from "ioredis";
import { DEFAULTS } from "../common/defaults.ts";
import { checkDurability, type Durability, DURABILITY_LINES, isDurability } from "./durability.ts";
import { keySlot } from "./key-slot.ts";
import { type KeySpace, keySpace, StoreInputError } from "./keys.ts";
import type { BellListener, BellWatch } from "./port.ts";
import { type ScriptStore, scriptStore } from "./lua-store.ts";
import { redisLive } from "./redis-live.ts";
import { assertNoEviction, pipelineRunner, scriptRunner } from "./script-runner.ts";

export interface RedisStoreOptions {
  /** `redis://` or `rediss://` URL; the store opens (and closes) its own client. */
  url?: string;
  /**
   * Seed nodes of a Redis Cluster (`redis://[user:password@]host:port`,
   * `rediss://…` for TLS, or `host:port`); the store opens (and closes) its
   * own ioredis `Cluster` client. Credentials and TLS of the first node apply
   * to every node.
   */
  clusterNodes?: string[];
  /** An existing ioredis client (`Redis` or `Cluster`); the store does not close it. */
  client?: Redis | Cluster;
  /**
   * Lay keys out in this many shards (1-256), each in one Cluster slot.
   * Default: 16 on a Cluster, unsharded on one Redis. Part of the key
   * layout: a prefix keeps the count it was created with (docs/store.md).
   */
  shards?: number;
  /** Key prefix (default `gh`), so several deployments can share one Redis. */
  prefix?: string;
  /** Accept a maxmemory-policy that may evict keys (default false). */
  allowEviction?: boolean;
  /**
   * The persistence acknowledged steps need (store/durability.ts; docs/store.md, "Durability"):
   * `fsync-always` (the default: survive a host crash), `fsync-everysec` (survive a Redis crash, a host
   * crash may lose about 1 s) or `none`. A server configured for less is logged
   * (`store_durability_weaker`, warn) at the first check, not refused. Needs `logger`.
   */
  durability?: Durability;
  /**
   * Connection errors of an owned client (it reconnects on its own and
   * queues commands meanwhile; a command that fails still rejects). Default:
   * ignored here, since the failing operations surface them to the worker.
   */
  onError?: (err: Error) => void;
  /**
   * Receives `store_reconnecting` ({ delayMs, error }) once when the
   * connection is lost and ioredis schedules its first reconnect, and
   * `store_ready` ({ downMs, attempts, errors, lastError }) once when it is
   * back: one line per state change, not per attempt (docs/operations.md).
   * A `Logger` of actors/runtime.ts fits.
   */
  logger?: StoreLogger;
}

/** What the adapter needs of a logger (`warn` absent: warnings go to `info`). */
export interface StoreLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn?(msg: string, fields?: Record<string, unknown>): void;
}

/** The default shard count on a Redis Cluster. */
export const CLUSTER_SHARDS = DEFAULTS.redisShards;

/** What the runtime gives the adapter (the package's `./redis` entry, redis.ts): not options of a deployment. */
export interface RedisRuntime {
  /** Runs `fn` once the current burst of microtasks ran, before the event loop's next turn (Node: `process.nextTick`). */
  afterBurst?: (fn: () => void) => void;
}

export function redisStore(opts: string | RedisStoreOptions, runtime: RedisRuntime = {}): ScriptStore {
  const o: RedisStoreOptions = typeof opts === "string" ? { url: opts } : opts;
  const given = [o.client && "client", o.url && "url", o.clusterNodes && "clusterNodes"].filter(Boolean);
  if (given.length === 0) throw new StoreInputError("redisStore needs a url, clusterNodes or an ioredis client");
  if (given.length > 1) throw new StoreInputError(`redisStore takes one of url, clusterNodes and client, got ${given.join(" and ")}`);
  if (o.clusterNodes && (!Array.isArray(o.clusterNodes) || o.clusterNodes.length === 0 || o.clusterNodes.some((n) => typeof n !== "string" || n === ""))) {
    throw new StoreInputError("Cannot open a Redis Cluster client: clusterNodes must be a non-empty list of `redis://host:port` or `host:port`");
  }
  const durability = o.durability ?? DEFAULTS.durability;
  if (!isDurability(durability)) {
    throw new StoreInputError(`redisStore durability ${JSON.stringify(durability)} is not one of fsync-always, fsync-everysec, none`);
  }
  const clustered = !!o.clusterNodes || o.client instanceof Cluster;
  const keys = keySpace(o.prefix, { shards: o.shards ?? (clustered ? CLUSTER_SHARDS : undefined) });
  const owned = !o.client;
  // No auto-pipelining: commands are still written without waiting for earlier replies (Redis
  // pipelining), but at once instead of batched until the next setImmediate, which delays every
  // round trip by a turn of a busy event loop (about +35 % steps/s at 100 agents without it).
  const client: Redis | Cluster = o.client ??
    (o.clusterNodes ? openCluster(o.clusterNodes) : new Redis(o.url!, { enableAutoPipelining: false }));
  // Without a listener ioredis reports every failed reconnect attempt as an unhandled error event.
  if (owned) client.on("error", o.onError ?? (() => {}));
  if (o.logger) watchConnection(client, o.logger);

  const burst = client instanceof Redis && runtime.afterBurst ? writeBurst(client, runtime.afterBurst) : () => {};
  const run = scriptRunner({
    evalsha: (sha, keys, args) => (burst(), client.evalsha(sha, keys.length, ...keys, ...args)),
    eval: (source, keys, args) => (burst(), client.eval(source, keys.length, ...keys, ...args)),
  });

  // Scripts in one pipeline (store/port.ts invariant `enqueue-then-claim`): one Redis only, a Cluster pipeline holds one slot.
  const pipeline = client instanceof Cluster ? undefined : pipelineRunner(async (calls) => {
    const p = client.pipeline();
    for (const [sha, ks, args] of calls) p.evalsha(sha, ks.length, ...ks, ...args);
    return ((await p.exec()) ?? []) as Array<[Error | null, unknown]>;
  }, run);

  const watches = new Set<BellWatch>();
  const live = redisLive(client, keys);
  return scriptStore({
    kind: "redis",
    keys,
    run,
    ...(pipeline ? { pipeline } : {}),
    live,
    watchBells(targets, listener) {
      const w = watchBells(client, keys, targets, listener, () => watches.delete(w), o.logger);
      watches.add(w);
      return w;
    },
    async checkEviction() {
      await checkLayout(client, keys);
      // On a Cluster every master holds agents: each one's policy (and persistence) counts.
      const servers = client instanceof Cluster ? client.nodes("master") : [client];
      const persistence = o.logger && durability !== "none";
      let policy: string | null = null;
      const found: Array<{ server: Redis; append: Record<string, string> | null }> = [];
      for (const server of servers) {
        const p = (await configGet(server, "maxmemory-policy"))?.["maxmemory-policy"] ?? null;
        assertNoEviction(p, o.allowEviction ?? false);
        policy ??= p;
        if (persistence) found.push({ server, append: await configGet(server, "append*") });
      }
      // Logged once everything was read: a check that throws (an outage) runs again and logs then.
      // Masters that refuse CONFIG share one unchecked line; each weaker master gets its own line.
      const logger = o.logger;
      if (logger && found.some((f) => f.append === null)) reportDurability(logger, durability, null);
      for (const f of found) if (logger && f.append) reportDurability(logger, durability, f.append, clustered ? nodeName(f.server) : undefined);
      return { policy };
    },
    async scan(cursor, pattern) {
      // On a Cluster SCAN lists one node's keys: ask the master of the pattern's slot (the
      // pattern starts with the agent's home prefix, whose shard tag is its first braces).
      const server = client instanceof Cluster ? await masterOfSlot(client, keySlot(pattern)) : client;
      const [next, batch] = await server.scan(cursor, "MATCH", pattern, "COUNT", 500);
      return [String(next), batch];
    },
    async close() {
      await Promise.all([...watches].map((w) => w.close()));
      await live.close?.();
      if (owned) await client.quit().catch(() => client.disconnect());
    },
  });
}

/**
 * A bell watch: a duplicate of the client (same server or Cluster, same
 * credentials) subscribed to the channel of each ready queue of `targets`,
 * one per home. It reports `listening(true)` once its SUBSCRIBE is answered,
 * after every reconnect too (it subscribes again itself, then reports: a
 * bell published while it was down was lost, the listener polls once), and
 * `listening(false)` when the connection closes. A server that refuses the
 * subscription (an ACL user without channel rights) never listens: the
 * pool polls, and `store_bells_polled` is logged. `close()` disconnects at
 * once, so a waiting worker pool stops without waiting for a reply.
 */
function watchBells(
  client: Redis | Cluster,
  keys: KeySpace,
  targets: readonly string[],
  listener: BellListener,
  onClose: () => void,
  logger?: StoreLogger,
): BellWatch {
  const byChannel = new Map<string, string>();
  for (const t of targets) for (const home of keys.shards) byChannel.set(home.ready(t), t);
  const channels = [...byChannel.keys()];
  const sub: Redis | Cluster = client instanceof Cluster
    ? client.duplicate(undefined, { lazyConnect: false })
    : client.duplicate({ autoResubscribe: false, lazyConnect: false, enableOfflineQueue: true });
  let closed = false;
  let on = false;
  const report = (v: boolean) => {
    if (closed || on === v) return;
    on = v;
    listener.listening(v);
  };
  sub.on("error", () => {});
  sub.on("message", (channel: string, message: string) => {
    const target = byChannel.get(channel);
    const at = Number(message);
    if (!closed && target !== undefined && Number.isFinite(at)) listener.bell(target, at);
  });
  sub.on("ready", () => {
    if (closed || channels.length === 0) return;
    // The connection drops again before the answer: its next `ready` subscribes again. A refusal
    // (an ACL user without these channels) leaves the pool polling.
    sub.subscribe(...channels).then(() => report(true), (err: Error) => {
      if (err.name === "ReplyError") logger?.info("store_bells_polled", { error: err.message });
    });
  });
  sub.on("close", () => report(false));
  return {
    async close() {
      if (closed) return;
      closed = true;
      onClose();
      sub.disconnect();
    },
  };
}

/**
 * `CONFIG GET <pattern>` as a record; null when the server refuses CONFIG (a managed Redis, an ACL user
 * without +config, a renamed command). Anything else (an outage) throws.
 */
async function configGet(server: Redis, pattern: string): Promise<Record<string, string> | null> {
  try {
    const reply = (await server.config("GET", pattern)) as string[];
    const out: Record<string, string> = {};
    for (let i = 0; i + 1 < reply.length; i += 2) out[reply[i]] = reply[i + 1];
    return out;
  } catch (err) {
    if ((err as Error).name !== "ReplyError") throw err;
    return null;
  }
}

/** One line per server: it keeps less than `wanted` (warn), could not be read (info), or meets it (info, with the settings checked). */
function reportDurability(logger: StoreLogger, wanted: Durability, append: Record<string, string> | null, node?: string): void {
  const at = node === undefined ? {} : { node };
  if (append === null) {
    logger.info(DURABILITY_LINES.unchecked, { wanted, reason: "the server refused CONFIG GET", ...at });
    return;
  }
  const server = { appendonly: append.appendonly ?? null, appendfsync: append.appendfsync ?? null };
  const check = checkDurability(wanted, server);
  if (check.outcome === "unknown") {
    logger.info(DURABILITY_LINES.unchecked, { wanted, reason: "appendonly / appendfsync not reported", ...server, ...at });
  } else if (check.outcome === "meets") {
    logger.info(DURABILITY_LINES.meets, { ...server, wanted, ...at });
  } else {
    const fields = { ...server, wanted, loses: check.loses, ...at };
    if (logger.warn) logger.warn(DURABILITY_LINES.weaker, fields);
    else logger.info(DURABILITY_LINES.weaker, fields);
  }
}

/** host:port of a Cluster node (never credentials). */
const nodeName = (server: Redis) => `${server.options.host}:${server.options.port}`;

/**
 * Corks the client's socket at the first command of a burst of microtasks and uncorks it once the burst
 * ran (`afterBurst`): the commands the burst issued leave in one `writev`, in the order they were issued.
 * A socket that is not ready (connecting, reconnecting: ioredis queues the commands itself) is left alone.
 */
function writeBurst(client: Redis, afterBurst: (fn: () => void) => void): () => void {
  let corked = false;
  return () => {
    const stream = client.stream as { cork?: () => void; uncork?: () => void; writable?: boolean } | undefined;
    if (corked || !stream?.cork || !stream.writable || client.status !== "ready") return;
    corked = true;
    stream.cork();
    afterBurst(() => {
      corked = false;
      stream.uncork!();
    });
  };
}

/** An ioredis Cluster client on seed nodes; credentials and TLS of the first node apply to all. */
function openCluster(nodes: string[]): Cluster {
  const first = /^rediss?:\/\//.test(nodes[0]) ? new URL(nodes[0]) : null;
  const redisOptions: Record<string, unknown> = {};
  if (first?.username) redisOptions.username = decodeURIComponent(first.username);
  if (first?.password) redisOptions.password = decodeURIComponent(first.password);
  if (first?.protocol === "rediss:") redisOptions.tls = {};
  return new Cluster(nodes, { enableAutoPipelining: false, redisOptions });
}

/**
 * The sharded layout records its shard count once (`SET … NX`) and refuses a
 * prefix created with another: a different count would look for every agent
 * in another shard. The unsharded layout has no record (no extra command).
 */
async function checkLayout(client: Redis | Cluster, keys: KeySpace): Promise<void> {
  if (keys.layout === null) return;
  const want = `shards=${keys.shardCount}`;
  await client.set(keys.layout, want, "NX");
  const have = await client.get(keys.layout);
  if (have !== want) {
    throw new StoreInputError(`Cannot use key prefix ${JSON.stringify(keys.prefix)} with ${keys.shardCount} shards: it was laid out with ${have}`);
  }
}

/** The master connection serving `slot` (the client's slot map; it is loaded once the client is ready). */
async function masterOfSlot(client: Cluster, slot: number): Promise<Redis> {
  const find = () => {
    const addr = (client.slots[slot] as string[] | undefined)?.[0];
    return addr === undefined ? undefined : client.nodes("master").find((m) => `${m.options.host}:${m.options.port}` === addr);
  };
  let node = find();
  if (!node) {
    // Not connected yet (the slot map is empty until then), or the map is stale: a keyless
    // command waits for the connection, a refresh reloads the map.
    await client.ping();
    node = find();
  }
  if (!node) throw new Error(`Cannot scan slot ${slot} of the Redis Cluster: no master serves it`);
  return node;
}

/**
 * Logs the connection's state changes, not its attempts: `store_reconnecting`
 * once when the connection is lost (up -> down: the first reconnect is
 * scheduled), `store_ready` once when it is back (down -> up), with the
 * reconnect attempts and connection errors counted in between. An outage of
 * any length writes two lines.
 */
function watchConnection(client: Redis | Cluster, logger: StoreLogger): void {
  let lastError = "";
  /** While down: since when, and the attempts and errors seen. */
  let down: { since: number; attempts: number; errors: number } | null = null;
  client.on("error", (err: Error) => {
    lastError = err.message;
    if (down) down.errors++;
  });
  client.on("close", () => {
    // A server that went away cleanly (or was killed) closes the socket without an error event.
    lastError ||= "connection closed";
  });
  client.on("reconnecting", (delayMs: number) => {
    if (down) {
      down.attempts++;
      return;
    }
    down = { since: Date.now(), attempts: 1, errors: 0 };
    logger.info("store_reconnecting", { delayMs, error: lastError });
  });
  client.on("ready", () => {
    const was = down;
    const error = lastError;
    lastError = "";
    down = null;
    if (was) logger.info("store_ready", { downMs: Date.now() - was.since, attempts: was.attempts, errors: was.errors, lastError: error });
  });
}
