/**
 * configFromEnv(): the one parser of the environment shared by every entry
 * (the CLI, `serveNode`/`serveDeno`/`serveBun`'s `startFromEnv`, the demo
 * entries). The environment comes in as a plain record (`process.env`,
 * `Deno.env.toObject()`, `Bun.env`), so this file reads no globals.
 *
 * Invariants:
 * - Every variable is checked whole: `GATEHOUSE_LEASE_MS=30s`, `PORT=-1` or
 *   `GATEHOUSE_CONCURRENCY=0` is a ConfigError naming the variable, the value
 *   and what is expected; nothing is half-parsed or silently defaulted.
 * - An empty value counts as unset (so `VAR= cmd` turns a setting off).
 * - Options left unset are left out of `gatehouse`, so createGatehouse's own
 *   defaults apply and stay defined in one place.
 * - An unknown `GATEHOUSE_*` variable is reported in `unknown` (the entries
 *   log a warning naming it): a typo does not pass silently, and variables
 *   read by other parts of a deployment do not stop it.
 *
 * The table `ENV_VARIABLES` is the reference docs/api.md and
 * docs/operations.md print; tests/runtimes/config.test.ts checks both against it.
 */
import type { GatehouseOptions } from "../mod.ts";
import { authFromEnv, checkAuthConfig } from "../ops.ts";
import { closestKey } from "../common/known-keys.ts";
import { ConfigError } from "../errors/startup.ts";
import { DEFAULTS, rateRuleText } from "../common/defaults.ts";
import { isDurability } from "../store/durability.ts";
import { DEFAULT_MAX_DELAYED_TASKS } from "../store/delayed-bound.ts";
import { concurrencyLimitsProblem, DEFAULT_METRICS_LANES, MAX_METRICS_LANES } from "../common/concurrency.ts";

export type Env = Record<string, string | undefined>;
export type LogLevel = "debug" | "info" | "warn" | "error";

/** A bad configuration value: one line naming the variable (errors/startup.ts). */
export { ConfigError };

/** What the environment sets of createGatehouse's options. */
export type EnvGatehouseOptions = Pick<
  GatehouseOptions,
  | "concurrency"
  | "leaseMs"
  | "pollMs"
  | "idlePollMaxMs"
  | "watchdogIntervalMs"
  | "watchdogIdleMaxMs"
  | "maxBodyBytes"
  | "whatIfMaxCandidates"
  | "maxWaitSeconds"
  | "maxSchedulesPerAgent"
  | "maxDelayedTasks"
  | "concurrencyLimits"
  | "metricsLanes"
  | "externalToolTimeoutMs"
  | "toolTimeoutMs"
  | "storeTimeoutMs"
  | "auth"
  | "rateLimits"
  | "retention"
>;

export interface EnvConfig {
  /** Listening port (PORT, default 8787; 0 picks a free one). */
  port: number;
  /** Listening address (HOST, default 127.0.0.1). */
  hostname: string;
  /** GATEHOUSE_LOG (default info). */
  logLevel: LogLevel;
  /** Bound of the startup store check in ms (GATEHOUSE_STORE_TIMEOUT_MS, default 5 000 at startup). */
  storeTimeoutMs: number;
  /** createGatehouse options set by the environment (only those that are set). */
  gatehouse: EnvGatehouseOptions;
  /** GATEHOUSE_* variables this parser does not know (the entries warn about them). */
  unknown: string[];

}

export interface EnvVariable {
  name: string;
  /** The createGatehouse option it sets, if any. */
  option?: string;
  default: string;
  meaning: string;
}

/** Every variable the entries read, in the order the docs list them. */
export const ENV_VARIABLES: readonly EnvVariable[] = [
  { name: "PORT", default: String(DEFAULTS.port), meaning: "listening port (0: any free port)" },
  { name: "HOST", default: DEFAULTS.host, meaning: "listening address (`0.0.0.0` for every interface)" },
  { name: "GATEHOUSE_LOG", default: "info", meaning: "log level: `debug`, `info`, `warn`, `error` (JSON lines on stdout)" },
  { name: "GATEHOUSE_CONCURRENCY", option: "concurrency", default: String(DEFAULTS.concurrency), meaning: "worker loops per process (1 to 1024)" },
  { name: "GATEHOUSE_LEASE_MS", option: "leaseMs", default: String(DEFAULTS.leaseMs), meaning: "claim lease; a dead worker's agents are offered again after it" },
  { name: "GATEHOUSE_POLL_MS", option: "pollMs", default: String(DEFAULTS.pollMs), meaning: "first idle wait of the worker pool, and its wait after any claim or in-process wake" },
  { name: "GATEHOUSE_IDLE_POLL_MAX_MS", option: "idlePollMaxMs", default: `${DEFAULTS.idlePollMaxMs} (${DEFAULTS.idlePollMaxMsTcp} on TCP Redis)`, meaning: "longest idle wait of the worker pool while it polls (the wait doubles from `pollMs`); work enqueued by another process is found within it. On TCP Redis bells are pushed and it applies only while the connection that hears them is down" },
  { name: "GATEHOUSE_WATCHDOG_INTERVAL_MS", option: "watchdogIntervalMs", default: String(DEFAULTS.watchdogIntervalMs), meaning: "watchdog pass interval while a deadline is near" },
  { name: "GATEHOUSE_WATCHDOG_IDLE_MAX_MS", option: "watchdogIdleMaxMs", default: String(DEFAULTS.watchdogIdleMaxMs), meaning: "longest idle wait of the watchdog (doubles from `watchdogIntervalMs` while no deadline is near)" },
  { name: "GATEHOUSE_MAX_BODY_BYTES", option: "maxBodyBytes", default: String(DEFAULTS.maxBodyBytes), meaning: "request body limit (413 above it)" },
  { name: "GATEHOUSE_WHAT_IF_MAX_CANDIDATES", option: "whatIfMaxCandidates", default: String(DEFAULTS.whatIfMaxCandidates), meaning: "candidates one `POST .../what-if` judges at most (1 to 1000; docs/security.md, \"What-if\")" },
  { name: "GATEHOUSE_MAX_SCHEDULES_PER_AGENT", option: "maxSchedulesPerAgent", default: String(DEFAULTS.maxSchedulesPerAgent), meaning: "schedules one agent may hold (1 to 10000; a new one past it is 409 `schedule_limit`; docs/security.md, \"Schedules\")" },
  { name: "GATEHOUSE_MAX_DELAYED_TASKS", option: "maxDelayedTasks", default: String(DEFAULT_MAX_DELAYED_TASKS), meaning: "delayed tasks (`delayMs`/`runAt` not yet due) one agent may hold (0 to 1000000; one more is 429 `too_many_delayed_tasks`; docs/security.md, \"Delayed tasks\")" },
  { name: "GATEHOUSE_CONCURRENCY_LIMITS", option: "concurrencyLimits", default: "none", meaning: "concurrency limits by key, JSON: `{\"user:42\": 5, \"*\": 10}` (`*`: each key not named; limits 1 to 1000000; tasks over a limit wait queued; docs/operations.md, \"Concurrency and fairness\")" },
  { name: "GATEHOUSE_METRICS_LANES", option: "metricsLanes", default: String(DEFAULT_METRICS_LANES), meaning: "lanes `/metrics` reports one by one (0 to 1000): the busiest; the rest are summed under `key=\"_other\"`" },
  { name: "GATEHOUSE_MAX_WAIT_SECONDS", option: "maxWaitSeconds", default: String(DEFAULTS.maxWaitSeconds), meaning: "longest `Prefer: wait` a task POST honours (0 to 3600; 0: off; docs/http.md)" },
  { name: "GATEHOUSE_EXTERNAL_TOOL_TIMEOUT_MS", option: "externalToolTimeoutMs", default: String(DEFAULTS.externalToolTimeoutMs), meaning: "resume deadline of external tool calls" },
  { name: "GATEHOUSE_TOOL_TIMEOUT_MS", option: "toolTimeoutMs", default: String(DEFAULTS.toolTimeoutMs), meaning: "timeout of in-process tools" },
  { name: "GATEHOUSE_TOKENS", option: "auth", default: "off", meaning: "bearer tokens: comma-separated full-access tokens, or a JSON array of `{ token, tenants?, verbs? }` scoped to tenant prefixes and verbs (docs/security.md)" },
  { name: "GATEHOUSE_TOKEN", option: "auth", default: "off", meaning: "one more full-access bearer token" },
  { name: "GATEHOUSE_BEARER_TOKENS", option: "auth", default: "off", meaning: "comma-separated full-access bearer tokens (16+ visible ASCII characters each)" },
  { name: "GATEHOUSE_WEBHOOK_SECRETS", option: "auth", default: "off", meaning: "comma-separated Standard Webhooks secrets (`whsec_…`): write routes accept requests signed with one of them; or a JSON array of `\"whsec_…\"` and `{ secret, tenants?, verbs? }` limiting a sender to tenant prefixes" },
  { name: "QSTASH_CURRENT_SIGNING_KEY", option: "auth", default: "off", meaning: "QStash current signing key (with the next one): write routes accept QStash-signed requests" },
  { name: "QSTASH_NEXT_SIGNING_KEY", option: "auth", default: "off", meaning: "QStash next signing key (set together with the current one)" },
  { name: "GATEHOUSE_QSTASH_TENANTS", option: "auth", default: "every agent", meaning: "comma-separated agent-id prefixes that QStash-signed requests reach (docs/security.md)" },
  { name: "GATEHOUSE_PUBLIC_URL", option: "auth", default: "the request's URL", meaning: "the URL senders call this deployment by (`https://host` or `https://host/prefix`) when a proxy or load balancer stands in front: a QStash token's `sub` must be it plus the request's path (docs/security.md); used only with auth" },
  { name: "GATEHOUSE_RATE_LIMIT_PER_TOKEN", option: "rateLimits", default: `${rateRuleText(DEFAULTS.rateLimits.perToken)} with auth, off without`, meaning: "requests per token: `<count>/<period>` (period `500ms`, `30s`, `1m`, `1h`) or `off`; 429 `rate_limited` beyond it, held in the store across processes (docs/security.md)" },
  { name: "GATEHOUSE_RATE_LIMIT_PER_AGENT", option: "rateLimits", default: `${rateRuleText(DEFAULTS.rateLimits.perAgent)} with auth, off without`, meaning: "requests per agent, same form; setting either variable turns rate limits on even without auth" },
  { name: "GATEHOUSE_STORE_TIMEOUT_MS", option: "storeTimeoutMs", default: `${DEFAULTS.storeTimeoutMs} (${DEFAULTS.startupStoreTimeoutMs} at startup)`, meaning: "longest wait for the store in a request (503 `store_unavailable` past it), and how long a start waits for the store before it gives up (exit code 4)" },
  { name: "GATEHOUSE_RETENTION", option: "retention", default: "on", meaning: "`off` keeps every agent's whole history; `on` applies the limits below (store/retention.ts)" },
  { name: "GATEHOUSE_RETENTION_MAX_EVENTS", option: "retention", default: String(DEFAULTS.retention.maxEvents), meaning: "events kept per agent (plus those of the turn that ends)" },
  { name: "GATEHOUSE_RETENTION_MAX_EVENT_BYTES", option: "retention", default: String(DEFAULTS.retention.maxEventBytes), meaning: "bytes of event JSON kept per agent" },
  { name: "GATEHOUSE_RETENTION_MAX_TURNS", option: "retention", default: String(DEFAULTS.retention.maxTurns), meaning: "ended turns whose records (status, input, tool calls, messages) are kept per agent, at least" },
  { name: "GATEHOUSE_REDIS_URL", default: "—", meaning: "Redis over TCP (`redis://`, `rediss://`); else the memory store" },
  { name: "GATEHOUSE_REDIS_CLUSTER_NODES", default: "—", meaning: "Redis Cluster seed nodes, comma-separated (`redis://host:port` or `host:port`); instead of `GATEHOUSE_REDIS_URL`" },
  { name: "GATEHOUSE_REDIS_SHARDS", default: `${DEFAULTS.redisShards} (Cluster)`, meaning: "shards of the Cluster key layout (1 to 256; docs/store.md); fixed for a prefix once used" },
  { name: "GATEHOUSE_REDIS_PREFIX", default: "gh", meaning: "key prefix, so several deployments can share one Redis" },
  { name: "GATEHOUSE_ALLOW_EVICTION", default: "0", meaning: "`1` accepts a `maxmemory-policy` that may evict keys" },
  { name: "GATEHOUSE_DURABILITY", default: DEFAULTS.durability, meaning: "the Redis persistence acknowledged steps need: `fsync-always` (`appendonly yes`, `appendfsync always`: survive a host crash), `fsync-everysec` (AOF with `everysec` or `always`: survive a Redis crash, a host crash may lose about 1 s), `none`; a TCP Redis that keeps less is logged at startup (`store_durability_weaker`), not refused (docs/store.md, \"Durability\")" },
  { name: "UPSTASH_REDIS_REST_URL", default: "—", meaning: "Upstash REST URL (with the token below)" },
  { name: "UPSTASH_REDIS_REST_TOKEN", default: "—", meaning: "Upstash REST token" },
];

const KNOWN = new Set(ENV_VARIABLES.map((v) => v.name));
const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

function set(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

function integer(env: Env, name: string, min: number, max: number): number | undefined {
  const raw = set(env, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) {
    throw new ConfigError(`${name}=${JSON.stringify(raw)} is not a whole number (expected ${min} to ${max})`, name);
  }
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name}=${raw} is out of range (expected ${min} to ${max})`, name);
  }
  return n;
}

const DAY_MS = 86_400_000;

const PERIOD_UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `<count>/<period>` (e.g. `600/1m`) or `off`; undefined when unset. */
function rateRule(env: Env, name: string): { limit: number; periodMs: number } | false | undefined {
  const raw = set(env, name);
  if (raw === undefined) return undefined;
  if (raw === "off") return false;
  const m = /^(\d{1,7})\/(\d{1,8})(ms|s|m|h)$/.exec(raw);
  const limit = m ? Number(m[1]) : 0;
  const periodMs = m ? Number(m[2]) * PERIOD_UNITS[m[3]] : 0;
  if (!m || limit < 1 || limit > 1_000_000 || periodMs < 1 || periodMs > DAY_MS) {
    throw new ConfigError(
      `${name}=${JSON.stringify(raw)} is not a rate (expected <count>/<period> such as 600/1m, count 1 to 1000000, period up to 24h, or off)`,
      name,
    );
  }
  return { limit, periodMs };
}

/** GATEHOUSE_CONCURRENCY_LIMITS: a JSON object from keys (or "*") to limits, checked as createGatehouse checks it. */
function concurrencyLimitsFromEnv(env: Env): Record<string, number> | undefined {
  const name = "GATEHOUSE_CONCURRENCY_LIMITS";
  const raw = set(env, name);
  if (raw === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${name} is not JSON (expected an object such as {"user:42": 5, "*": 10})`, name);
  }
  const p = concurrencyLimitsProblem(v);
  if (p) throw new ConfigError(`${name}: ${p.message}`, name);
  return v as Record<string, number>;
}

/** GATEHOUSE_RETENTION (on/off) and the limits; undefined when none is set (createGatehouse's defaults). */
function retentionFromEnv(env: Env): EnvGatehouseOptions["retention"] {
  const sw = set(env, "GATEHOUSE_RETENTION");
  if (sw !== undefined && !["on", "off"].includes(sw)) {
    throw new ConfigError(`GATEHOUSE_RETENTION=${JSON.stringify(sw)} is not a switch (expected on or off)`, "GATEHOUSE_RETENTION");
  }
  const limits = {
    maxEvents: integer(env, "GATEHOUSE_RETENTION_MAX_EVENTS", 1, 100_000_000),
    maxEventBytes: integer(env, "GATEHOUSE_RETENTION_MAX_EVENT_BYTES", 1_024, 1_099_511_627_776),
    maxTurns: integer(env, "GATEHOUSE_RETENTION_MAX_TURNS", 1, 100_000_000),
  };
  const given = Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined));
  if (sw === "off") {
    if (Object.keys(given).length > 0) {
      throw new ConfigError("GATEHOUSE_RETENTION=off and retention limits are both set: choose one", "GATEHOUSE_RETENTION");
    }
    return false;
  }
  return Object.keys(given).length > 0 ? given : undefined;
}

/** An http(s) URL with a host and an optional path, without query, fragment or credentials (auth.publicUrl checks the same). */
function isPublicBaseUrl(raw: string): boolean {
  if (!/^https?:\/\/[^\s?#@]+$/.test(raw)) return false;
  try {
    return new URL(raw).host !== "";
  } catch {
    return false;
  }
}

/**
 * Reads the environment. Throws ConfigError on the first bad value.
 *
 * @example
 * const config = configFromEnv(process.env);
 * const gh = createGatehouse({ agents, store, ...config.gatehouse });
 */
export function configFromEnv(env: Env): EnvConfig {
  const logRaw = set(env, "GATEHOUSE_LOG");
  if (logRaw !== undefined && !LOG_LEVELS.includes(logRaw as LogLevel)) {
    throw new ConfigError(`GATEHOUSE_LOG=${JSON.stringify(logRaw)} is not a log level (expected debug, info, warn or error)`, "GATEHOUSE_LOG");
  }
  const gatehouse: EnvGatehouseOptions = {};
  const opt = <K extends keyof EnvGatehouseOptions>(key: K, value: EnvGatehouseOptions[K] | undefined) => {
    if (value !== undefined) gatehouse[key] = value;
  };
  opt("concurrency", integer(env, "GATEHOUSE_CONCURRENCY", 1, 1024));
  opt("leaseMs", integer(env, "GATEHOUSE_LEASE_MS", 1_000, DAY_MS));
  opt("pollMs", integer(env, "GATEHOUSE_POLL_MS", 1, 60_000));
  opt("idlePollMaxMs", integer(env, "GATEHOUSE_IDLE_POLL_MAX_MS", 1, 3_600_000));
  opt("watchdogIntervalMs", integer(env, "GATEHOUSE_WATCHDOG_INTERVAL_MS", 10, DAY_MS));
  opt("watchdogIdleMaxMs", integer(env, "GATEHOUSE_WATCHDOG_IDLE_MAX_MS", 10, DAY_MS));
  opt("maxBodyBytes", integer(env, "GATEHOUSE_MAX_BODY_BYTES", 1_024, 1_073_741_824));
  opt("whatIfMaxCandidates", integer(env, "GATEHOUSE_WHAT_IF_MAX_CANDIDATES", 1, 1_000));
  opt("maxWaitSeconds", integer(env, "GATEHOUSE_MAX_WAIT_SECONDS", 0, 3_600));
  opt("maxSchedulesPerAgent", integer(env, "GATEHOUSE_MAX_SCHEDULES_PER_AGENT", 1, 10_000));
  opt("maxDelayedTasks", integer(env, "GATEHOUSE_MAX_DELAYED_TASKS", 0, 1_000_000));
  opt("concurrencyLimits", concurrencyLimitsFromEnv(env));
  opt("metricsLanes", integer(env, "GATEHOUSE_METRICS_LANES", 0, MAX_METRICS_LANES));
  opt("externalToolTimeoutMs", integer(env, "GATEHOUSE_EXTERNAL_TOOL_TIMEOUT_MS", 1, 365 * DAY_MS));
  opt("toolTimeoutMs", integer(env, "GATEHOUSE_TOOL_TIMEOUT_MS", 1, DAY_MS));
  const storeTimeoutMs = integer(env, "GATEHOUSE_STORE_TIMEOUT_MS", 100, 600_000);
  opt("storeTimeoutMs", storeTimeoutMs);

  opt("retention", retentionFromEnv(env));

  const tokens = set(env, "GATEHOUSE_BEARER_TOKENS");
  if (tokens !== undefined) {
    const list = tokens.split(",").map((t) => t.trim()).filter((t) => t !== "");
    list.forEach((t, i) => {
      if (!/^[\x21-\x7e]{16,4096}$/.test(t)) {
        // The token itself is a secret: say which one and why, never print it.
        throw new ConfigError(
          `GATEHOUSE_BEARER_TOKENS: token ${i + 1} of ${list.length} is not 16 to 4096 visible ASCII characters (it has ${t.length})`,
          "GATEHOUSE_BEARER_TOKENS",
        );
      }
    });
    if (list.length === 0) throw new ConfigError("GATEHOUSE_BEARER_TOKENS is set but holds no token", "GATEHOUSE_BEARER_TOKENS");
    gatehouse.auth = { bearerTokens: list };
  }
  const publicUrl = set(env, "GATEHOUSE_PUBLIC_URL");
  if (publicUrl !== undefined && !isPublicBaseUrl(publicUrl)) {
    throw new ConfigError(
      `GATEHOUSE_PUBLIC_URL=${JSON.stringify(publicUrl)} is not a public base URL (expected http:// or https://, a host and an optional path, no query, fragment or credentials)`,
      "GATEHOUSE_PUBLIC_URL",
    );
  }
  // Any auth variable turns auth on for every route but /healthz, /readyz and
  // the debug page shell, fail closed (routes/auth/access.ts).
  let fromEnv;
  try {
    fromEnv = authFromEnv(env);
  } catch (err) {
    const message = (err as Error).message;
    throw new ConfigError(message, message.split(" ")[0]);
  }
  if (fromEnv !== undefined) gatehouse.auth = { ...gatehouse.auth, ...fromEnv };
  if (gatehouse.auth !== undefined && publicUrl !== undefined) gatehouse.auth.publicUrl = publicUrl;
  if (gatehouse.auth !== undefined) {
    const bad = checkAuthConfig(gatehouse.auth);
    // The message names the problem, never a secret.
    if (bad !== null) throw new ConfigError(`auth from the environment: ${bad}`);
  }

  const perToken = rateRule(env, "GATEHOUSE_RATE_LIMIT_PER_TOKEN");
  const perAgent = rateRule(env, "GATEHOUSE_RATE_LIMIT_PER_AGENT");
  if (perToken !== undefined || perAgent !== undefined) {
    gatehouse.rateLimits = perToken === false && perAgent === false
      ? false
      : { ...(perToken !== undefined ? { perToken } : {}), ...(perAgent !== undefined ? { perAgent } : {}) };
  }

  const hostname = set(env, "HOST") ?? DEFAULTS.host;
  if (/\s/.test(hostname)) throw new ConfigError(`HOST=${JSON.stringify(hostname)} is not a host name or address`, "HOST");
  const allowEviction = set(env, "GATEHOUSE_ALLOW_EVICTION");
  if (allowEviction !== undefined && !["0", "1", "true", "false"].includes(allowEviction)) {
    throw new ConfigError(`GATEHOUSE_ALLOW_EVICTION=${JSON.stringify(allowEviction)} is not a switch (expected 1, 0, true or false)`, "GATEHOUSE_ALLOW_EVICTION");
  }
  const durability = set(env, "GATEHOUSE_DURABILITY");
  if (durability !== undefined && !isDurability(durability)) {
    throw new ConfigError(`GATEHOUSE_DURABILITY=${JSON.stringify(durability)} is not a durability (expected fsync-always, fsync-everysec or none)`, "GATEHOUSE_DURABILITY");
  }
  const redisUrl = set(env, "GATEHOUSE_REDIS_URL");
  if (redisUrl !== undefined && !/^rediss?:\/\/[^\s]+$/.test(redisUrl)) {
    // The URL may hold a password: name the scheme we expected, not the value.
    throw new ConfigError("GATEHOUSE_REDIS_URL is not a redis:// or rediss:// URL", "GATEHOUSE_REDIS_URL");
  }
  const upstashUrl = set(env, "UPSTASH_REDIS_REST_URL");
  if (upstashUrl !== undefined && !/^https?:\/\/\S+$/.test(upstashUrl)) {
    throw new ConfigError("UPSTASH_REDIS_REST_URL is not an http:// or https:// URL", "UPSTASH_REDIS_REST_URL");
  }
  if ((upstashUrl === undefined) !== (set(env, "UPSTASH_REDIS_REST_TOKEN") === undefined)) {
    throw new ConfigError("UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN must be set together", "UPSTASH_REDIS_REST_URL");
  }
  const clusterNodes = set(env, "GATEHOUSE_REDIS_CLUSTER_NODES");
  if (clusterNodes !== undefined && !clusterNodes.split(",").every((n) => /^(rediss?:\/\/[^\s,]+|[^\s,/]+:\d{1,5})$/.test(n.trim()))) {
    // The URLs may hold a password: name the forms we expected, not the value.
    throw new ConfigError("GATEHOUSE_REDIS_CLUSTER_NODES is not a comma-separated list of redis:// URLs or host:port", "GATEHOUSE_REDIS_CLUSTER_NODES");
  }
  if (clusterNodes !== undefined && (redisUrl !== undefined || upstashUrl !== undefined)) {
    throw new ConfigError("GATEHOUSE_REDIS_CLUSTER_NODES is set with another store (GATEHOUSE_REDIS_URL or UPSTASH_REDIS_REST_URL): choose one", "GATEHOUSE_REDIS_CLUSTER_NODES");
  }
  integer(env, "GATEHOUSE_REDIS_SHARDS", 1, 256);
  if (redisUrl !== undefined && upstashUrl !== undefined) {
    throw new ConfigError("GATEHOUSE_REDIS_URL and UPSTASH_REDIS_REST_URL are both set: choose one store", "GATEHOUSE_REDIS_URL");
  }

  const unknown = Object.keys(env).filter((k) => k.startsWith("GATEHOUSE_") && !KNOWN.has(k)).sort();
  return {
    port: integer(env, "PORT", 0, 65_535) ?? DEFAULTS.port,
    hostname,
    logLevel: (logRaw as LogLevel | undefined) ?? "info",
    storeTimeoutMs: storeTimeoutMs ?? DEFAULTS.startupStoreTimeoutMs,
    gatehouse,
    unknown,
  };
}

/**
 * The known variable an unknown `GATEHOUSE_*` name was probably meant to be:
 * the nearest by edit distance, within a fifth of the name's length (at
 * least 2), so `GATEHOUSE_LEASE` finds `GATEHOUSE_LEASE_MS` and
 * `GATEHOUSE_CONCURENCY` finds `GATEHOUSE_CONCURRENCY`.
 */
export function nearestVariable(name: string): string | undefined {
  return closestKey(name, [...KNOWN], Math.max(2, Math.round(name.length / 5)));
}
