/**
 * Every default number of the runtime, in one table. `createGatehouse`
 * (gatehouse.ts), the claim-failure handling (actors/pool/claim-failure.ts), the
 * environment parser (entry/config.ts: its ENV_VARIABLES `default` column is
 * written from this table), retention (store/retention.ts), rate limits
 * (routes/rate-limit.ts) and what-if (routes/what-if.ts) read it; none of
 * them writes a default of its own (tests/docs/public-face.test.ts fails on a
 * `?? <number>` or a number in a `default:` string in those files).
 *
 * Where a number was chosen from a measurement, the bench and the section
 * of docs/operations.md are named beside it.
 * @module
 */

/** A rate-limit rule: `limit` requests per `periodMs` (routes/rate-limit.ts). */
export interface DefaultRateRule {
  readonly limit: number;
  readonly periodMs: number;
}

export const DEFAULTS = Object.freeze({
  /**
   * Worker loops per process, chosen from bench/concurrency.ts (docs/operations.md, "Worker loops"):
   * an idle loop costs no store call (one loop polls, or waits on pushed bells, for the pool).
   */
  concurrency: 64,
  /**
   * Claims `drain()` (and the inline mode) runs at once when `concurrency` is not set: every one of them
   * asks the store once more per pass even when nothing is left, so a drain stays cheap.
   */
  drainConcurrency: 4,
  /** Lease of a claim (ms), chosen from bench/takeover.ts (docs/operations.md). */
  leaseMs: 15_000,
  /** First idle wait of the worker pool (ms). */
  pollMs: 100,
  /**
   * Longest idle wait of the worker pool (ms), chosen from bench/idle.ts (docs/operations.md, "Idle cost"):
   * on Upstash, where every poll is billed, and on the memory store, where every bell rings in-process.
   */
  idlePollMaxMs: 5_000,
  /**
   * The same on TCP Redis while its bell watch does not listen (the connection is down): bells are pushed
   * there otherwise, and an idle pool waits for them instead of polling (actors/pool/pool.ts).
   */
  idlePollMaxMsTcp: 1_000,
  /** Watchdog pass interval while a deadline is near (ms). */
  watchdogIntervalMs: 1_000,
  /** Longest idle wait of the watchdog loop (ms), chosen from bench/idle.ts. */
  watchdogIdleMaxMs: 30_000,
  /** Tool calls one watchdog pass times out at most. */
  watchdogLimit: 100,
  /** Request body limit (bytes; 413 above it). */
  maxBodyBytes: 256 * 1024,
  /** Candidates one `POST .../what-if` judges at most (docs/security.md, "What-if"). */
  whatIfMaxCandidates: 20,
  /** Longest `Prefer: wait` a task POST honours (s; 0: waiting off; docs/http.md). */
  maxWaitSeconds: 60,
  /** Resume deadline of external tool calls (ms). */
  externalToolTimeoutMs: 600_000,
  /** Timeout of in-process tools (ms). */
  toolTimeoutMs: 60_000,
  /** First backoff after a verifier's system error (ms). */
  verifierBackoffMs: 1_000,
  /**
   * Schedules one agent may hold (store/port.ts invariant `schedule-bounds`; docs/security.md, "Schedules"):
   * each may tick every second, so this also bounds the fires one agent adds per second.
   */
  maxSchedulesPerAgent: 100,
  /** Claims of one turn that may throw before the turn fails (actors/pool/claim-failure.ts). */
  maxClaimFailures: 5,
  /** First backoff after a claim that threw (ms; doubles per failure). */
  claimRetryBackoffMs: 1_000,
  /** Longest wait for the store in a request (ms; 503 `store_unavailable` past it). */
  storeTimeoutMs: 3_000,
  /** Longest wait for the store at startup (ms; exit code 4 past it). */
  startupStoreTimeoutMs: 5_000,
  /** Event streams: store poll interval (ms). */
  ssePollMs: 250,
  /** Event streams: idle keep-alive interval (ms). */
  sseKeepAliveMs: 15_000,
  /**
   * What a request that rings a bell may spend driving agents on Workers (workers.ts): room for one slow
   * step inside `waitUntil`'s 30 s and the Free plan's 50 subrequests.
   */
  driveBudget: Object.freeze({ steps: 10, ms: 20_000 }) as { readonly steps: number; readonly ms: number },
  /** What one `scheduled` invocation may spend driving agents on Workers after its watchdog pass. */
  scheduledDriveBudget: Object.freeze({ steps: 15, ms: 20_000 }) as { readonly steps: number; readonly ms: number },
  /** Listening port of the servers (entry/). */
  port: 8787,
  /** Listening address of the servers started from the environment. */
  host: "127.0.0.1",
  /** Shards of the Redis Cluster key layout (store/redis.ts; docs/store.md). */
  redisShards: 16,
  /**
   * The Redis persistence a deployment asks for unless it says otherwise (store/durability.ts): every
   * acknowledged step on disk before Redis answers (`appendfsync always`), the only setting under which
   * "without losing acknowledged work" holds through a host crash; a Redis that keeps less is told once
   * at startup (`store_durability_weaker`, docs/store.md, "Durability check"), never refused.
   */
  durability: "fsync-always" as "fsync-always" | "fsync-everysec" | "none",
  /** Retention per agent (store/retention.ts; docs/store.md, "Retention"): about 2-4 MB of events, 200 turns' records. */
  retention: Object.freeze({
    maxEvents: 10_000,
    maxEventBytes: 4 * 1024 * 1024,
    maxTurns: 200,
    checkpointEvery: 2_500,
  }),
  /** Rate limits, on when auth is configured (routes/rate-limit.ts; docs/security.md). */
  rateLimits: Object.freeze({
    perToken: Object.freeze({ limit: 1_200, periodMs: 60_000 }) as DefaultRateRule,
    perAgent: Object.freeze({ limit: 600, periodMs: 60_000 }) as DefaultRateRule,
  }),
});

const UNITS: [string, number][] = [["h", 3_600_000], ["m", 60_000], ["s", 1_000], ["ms", 1]];

/** A rate rule as the environment writes it: `1200/1m`. */
export function rateRuleText(r: DefaultRateRule): string {
  const [unit, size] = UNITS.find(([, size]) => r.periodMs % size === 0)!;
  return `${r.limit}/${r.periodMs / size}${unit}`;
}
