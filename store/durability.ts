/**
 * What "acknowledged" means on Redis. A step is acknowledged when the script
 * that commits it has answered; whether it is still there after a crash is
 * decided by the server's persistence, which gatehouse does not set. A
 * deployment says what it needs (`durability`); the Redis adapter reads the
 * server's `appendonly` and `appendfsync` once (CONFIG GET) and logs
 * `store_durability_weaker` when they promise less, `store_durability` (info,
 * with the settings it checked) when they keep it (store/redis.ts). This
 * module is the comparison only (Web APIs only, no I/O).
 *
 * | durability | the server needs | an acknowledged step survives |
 * | --- | --- | --- |
 * | `fsync-always` (default) | `appendonly yes`, `appendfsync always` | a Redis process crash, a host crash, power loss |
 * | `fsync-everysec` | `appendonly yes`, `appendfsync everysec` or `always` | a Redis process crash; a host crash or power loss loses up to about 1 s of it |
 * | `none` | anything (nothing is read) | nothing is promised |
 *
 * Invariant: each setting has a level (appendonly no: 0; appendonly yes with
 * appendfsync no: 1, the OS flushes when it likes; everysec: 2; always: 3);
 * a server meets a durability when its level is at least the durability's
 * (none 0, fsync-everysec 2, fsync-always 3). A value this module does not
 * know (a server that hides or renames them) is `unknown`, never a guess in
 * either direction. Replication is not part of it: a write acknowledged by a
 * master and not yet copied to a replica is lost by a failover whatever the
 * fsync setting (WAIT is not used; docs/store.md, "Durability").
 *
 * @example
 * checkDurability("fsync-always", { appendonly: "yes", appendfsync: "everysec" });
 * // { outcome: "weaker", loses: "up to about 1 s of acknowledged writes on a host crash or power loss" }
 */

/** The persistence a deployment asks of its Redis, weakest last. */
export const DURABILITIES = ["fsync-always", "fsync-everysec", "none"] as const;
export type Durability = (typeof DURABILITIES)[number];

/** The log lines of the check (docs/operations.md, "Log lines"). */
export const DURABILITY_LINES = Object.freeze({
  /** info: the server keeps what `durability` asks; the line names the settings that were checked. */
  meets: "store_durability",
  /** warn: the server promises less than `durability` asks. */
  weaker: "store_durability_weaker",
  /** info: the server's persistence could not be read (CONFIG refused or unknown values). */
  unchecked: "store_durability_unchecked",
});

/** The two settings as CONFIG GET returns them; null when the server did not say. */
export interface Persistence {
  appendonly: string | null;
  appendfsync: string | null;
}

export type DurabilityCheck =
  | { outcome: "meets" }
  /** `loses`: what an acknowledged write may lose on this server, in words for the log line. */
  | { outcome: "weaker"; loses: string }
  | { outcome: "unknown" };

export function isDurability(v: unknown): v is Durability {
  return typeof v === "string" && (DURABILITIES as readonly string[]).includes(v);
}

const WANTED_LEVEL: Record<Durability, number> = { "fsync-always": 3, "fsync-everysec": 2, none: 0 };

const LOSES = [
  "every write since the last RDB snapshot (all of them without snapshots) when Redis restarts or crashes",
  "the writes the OS has not flushed yet (about 30 s on a default Linux) on a host crash or power loss",
  "up to about 1 s of acknowledged writes on a host crash or power loss",
] as const;

/** The level of a server's settings (see the module's invariant); null when a value is unknown. */
export function persistenceLevel(p: Persistence): number | null {
  const aof = p.appendonly?.toLowerCase();
  if (aof === "no") return 0;
  if (aof !== "yes") return null;
  const fsync = p.appendfsync?.toLowerCase();
  return fsync === "no" ? 1 : fsync === "everysec" ? 2 : fsync === "always" ? 3 : null;
}

/** Whether a server with `server`'s settings keeps what `wanted` promises. */
export function checkDurability(wanted: Durability, server: Persistence): DurabilityCheck {
  if (wanted === "none") return { outcome: "meets" };
  const level = persistenceLevel(server);
  if (level === null) return { outcome: "unknown" };
  return level >= WANTED_LEVEL[wanted] ? { outcome: "meets" } : { outcome: "weaker", loses: LOSES[level] };
}
