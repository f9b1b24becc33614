/** What the routes need from the runtime. Routes never touch workers or timers directly. */
import type { LiveSets } from "../store/port.ts";
import type { LiveChannel } from "../store/live.ts";
import type { AnyAgent } from "../agents/define.ts";
import type { ConcurrencyLimits } from "../store/port.ts";
import type { JsonLimits } from "../common/json-bounds.ts";
import type { Clock, IdSource, Logger } from "../actors/runtime.ts";
import type { Metrics } from "../actors/observe/metrics.ts";
import type { WatchdogTickResult } from "../actors/pool/watchdog.ts";
import type { EnqueueTaskRequest, EnqueueTaskResult, Store } from "../store/port.ts";
import type { RouteAuth } from "./auth/config.ts";
import type { RateLimits } from "./rate-limit.ts";
import type { GuardianRegistry } from "../verdicts/registry.ts";

export interface RouteLimits {
  /** Largest accepted request body in bytes (413 above it). */
  maxBodyBytes: number;
  /** Nesting depth, string length and items per array/object of every JSON body (400 above them). */
  json: JsonLimits;
  /** Largest page of `GET /events?after=`. */
  maxEventPage: number;
  /**
   * Byte budget of one events page (JSON page or one SSE write): the page
   * stops before the event that would pass it, but always holds one event.
   * Default 1 MiB.
   */
  maxEventPageBytes?: number;
  /** Candidates one `POST .../what-if` judges at most (default 20, routes/what-if.ts). */
  maxWhatIfCandidates?: number;
  /** Delayed tasks one agent may hold (store/delayed-bound.ts); absent: the store's default. */
  maxDelayedTasks?: number;
  /** Schedules one agent may hold (default DEFAULTS.maxSchedulesPerAgent, routes/schedules.ts). */
  maxSchedulesPerAgent?: number;
}

/** Caps on open SSE streams of this app (one process); 429 `too_many_streams` beyond them. */
export interface SseLimits {
  /** Open streams of one agent (default 8). */
  maxStreamsPerAgent: number;
  /** Open streams in all (default 1 000). */
  maxStreams: number;
}

export interface RouteRuntime {
  store: Store;
  agents: ReadonlyMap<string, AnyAgent>;
  /** Per name, every version this process registered, current first (actors/host/versions.ts). */
  versions?: ReadonlyMap<string, readonly AnyAgent[]>;
  /** The other definition sets this process's pool last heard of (actors/pool/definition-sets.ts). */
  liveSets?: LiveSets;
  /** Set once a shutdown began (`Gatehouse.drainWorker`): `/healthz` answers `draining`. */
  draining?: { on: boolean };
  clock: Clock;
  ids: IdSource;
  logger: Logger;
  limits: RouteLimits;
  /**
   * Rings local workers after this process enqueued work for `agentId`
   * (none: any agent may be due, e.g. after a watchdog tick). `request` is the
   * request that rang, so a per-request runtime (Workers: `ctx.waitUntil`)
   * can drive the work within that request's lifetime.
   */
  wake(agentId?: string, request?: Request): void;
  /**
   * Optional: enqueues a task this process accepted and rings its local workers in one go (the worker
   * pool's hand-over, actors/pool/pool.ts: with a free loop, the enqueue and that loop's claim in one
   * round trip). Answers the enqueue's result (throws what it threw) and `rung`: the workers were rung
   * already, no `wake` is needed. Absent: `store.enqueueTask`, then `wake`.
   */
  enqueueTask?(req: EnqueueTaskRequest, request?: Request): Promise<{ result: EnqueueTaskResult; rung: boolean }>;
  watchdogTick(request?: Request): Promise<WatchdogTickResult>;
  /**
   * The live channel (store/live.ts): model deltas for SSE readers, and the
   * "log grew" notices that wake streams and `Prefer: wait`.
   */
  live?: LiveChannel;
  /**
   * True when every commit on the store publishes on `live` (the store's own
   * channel): streams and waits are woken by it instead of polling.
   */
  livePushes?: boolean;
  /** The concurrency limits this deployment claims under (`createGatehouse({ concurrencyLimits })`): `waiting` reads them. */
  concurrencyLimits?: ConcurrencyLimits;
  /** Lanes `/metrics` reports one by one (default DEFAULT_METRICS_LANES, common/concurrency.ts). */
  metricsLanes?: number;
  /** Longest `Prefer: wait` honoured (s); 0: none (default 60, routes/prefer-wait.ts). */
  maxWaitSeconds?: number;
  /** How often an open SSE stream polls the store for new events (ms). */
  ssePollMs: number;
  /** Interval of keep-alive comments on an idle SSE stream (ms, default 15 000). */
  sseKeepAliveMs?: number;
  /** Caps on open event streams (defaults in routes/events.ts). */
  sseLimits?: Partial<SseLimits>;
  /**
   * Store reads after which an SSE stream ends, telling the client to
   * reconnect (`retry:`), so one request's subrequests stay bounded (default:
   * unbounded).
   */
  sseMaxReads?: number;
  /** The `retry:` value (ms) sent when a stream ends on `sseMaxReads` (default 1 000). */
  sseRetryMs?: number;
  /** When set, every route but `/healthz` and `/readyz` requires a token or (write routes) a signature; see routes/auth.ts. */
  /** The guardian registry (for `POST .../what-if`); without it only the agents' output verifiers can be named. */
  guardians?: GuardianRegistry;
  /** The process metrics `GET /metrics` serves (default: an empty set). */
  metrics?: Metrics;
  /** Worker targets whose ready-queue depth `GET /metrics` reports. */
  workerTargets?: readonly string[];
  auth?: RouteAuth;
  /** Rate limits per token and per agent (routes/rate-limit.ts); none when absent. */
  rateLimits?: RateLimits | null;
}

export type { RouteAuth } from "./auth/config.ts";
