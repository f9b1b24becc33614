/**
 * createGatehouse(): wires agents, a store, the worker pool, the watchdog and
 * the Hono app. Reads no environment: runtime entry files (entry/) do that.
 * A composition root: the options are checked in gatehouse-options.ts, the
 * parts are built here, and nothing here claims or runs a turn (the pool
 * does, actors/pool/).
 *
 * Construction does no I/O, starts no timer and draws no random value (the
 * worker id is drawn on first use): Cloudflare Workers refuse randomness
 * outside a handler, and an instance built at module scope must still start.
 */
import type { AnyAgent } from "./agents/define.ts";
import { DefinitionError } from "./errors/errors.ts";
import { onWorkers } from "./common/runtime.ts";
import { DEFAULTS } from "./common/defaults.ts";
import { lruCache } from "./actors/conversation/cache.ts";
import { keptResults } from "./actors/claim/kept-results.ts";
import { DEFAULT_MAX_CHAINED_TURNS, type HostDeps } from "./actors/claim/context.ts";
import { type IdSource, randomIds, silentLogger, systemClock } from "./actors/runtime.ts";
import { createMetrics, meteredStore, type Metrics } from "./actors/observe/metrics.ts";
import { watchdogTick, type WatchdogTickResult } from "./actors/pool/watchdog.ts";
import { createWatchdogLoop, type WatchdogLoop } from "./actors/pool/watchdog-loop.ts";
import { createWorkerPool, type WorkerPool } from "./actors/pool/pool.ts";
import { createRegistryWriter } from "./actors/registry/writer.ts";
import { createApp } from "./routes/app.ts";
import type { GatehouseApp } from "./routes/app-type.gen.ts";
import { DEFAULT_EVENT_PAGE_BYTES } from "./routes/events.ts";
import { copyAuth } from "./routes/auth/config.ts";
import { resolveRateLimits } from "./routes/rate-limit.ts";
import type { RouteRuntime } from "./routes/runtime.ts";
import { memoryStore } from "./store/memory.ts";
import { type LiveChannel, processLive } from "./store/live.ts";
import type { EnqueueTaskRequest, Store } from "./store/port.ts";
import { DEFAULT_MAX_DELAYED_TASKS } from "./store/delayed-bound.ts";
import { storeWithDeadline, withDeadline } from "./store/outage.ts";
import type { VerificationHooks } from "./verification/gate.ts";
import { verdictRecorder } from "./verification/recorder.ts";
import { createVerdictLog, type VerdictLog } from "./verdicts/log.ts";
import type { GuardianRegistry } from "./verdicts/registry.ts";
import { type CheckedOptions, checkGatehouseOptions, type GatehouseOptions } from "./gatehouse-options.ts";

export type { GatehouseOptions } from "./gatehouse-options.ts";


/** Default worker loops per process (DEFAULTS.concurrency, common/defaults.ts). */
export const DEFAULT_CONCURRENCY = DEFAULTS.concurrency;
/** Default claims `drain()` runs at once when `concurrency` is not set (DEFAULTS.drainConcurrency). */
export const DEFAULT_DRAIN_CONCURRENCY = DEFAULTS.drainConcurrency;
/** Default lease of a claim in ms (DEFAULTS.leaseMs). */
export const DEFAULT_LEASE_MS = DEFAULTS.leaseMs;
/** First idle wait of the worker pool in ms (DEFAULTS.pollMs). */
export const DEFAULT_POLL_MS = DEFAULTS.pollMs;
/** Longest idle wait of the worker pool in ms (DEFAULTS.idlePollMaxMs). */
export const DEFAULT_IDLE_POLL_MAX_MS = DEFAULTS.idlePollMaxMs;
/** The same on TCP Redis while its bell watch does not listen (DEFAULTS.idlePollMaxMsTcp). */
export const DEFAULT_IDLE_POLL_MAX_MS_TCP = DEFAULTS.idlePollMaxMsTcp;
/** Longest idle wait of the watchdog loop in ms (DEFAULTS.watchdogIdleMaxMs). */
export const DEFAULT_WATCHDOG_IDLE_MAX_MS = DEFAULTS.watchdogIdleMaxMs;

export interface Gatehouse {
  app: GatehouseApp;
  fetch: (req: Request) => Promise<Response>;
  store: Store;
  agents: ReadonlyMap<string, AnyAgent>;
  /** Guardians and their assignments (output verifiers included). */
  guardians: GuardianRegistry;
  /** Verdict records: write-once, read upgraded. */
  verdicts: VerdictLog;
  /** Starts the background worker loops and the watchdog loop. */
  startWorker(): void;
  /** Stops the loops, then writes the tool registry's batched call counts (actors/registry/writer.ts). */
  stopWorker(): Promise<void>;
  /**
   * A graceful shutdown's first half (docs/operations.md, "Upgrades"): `/healthz` answers 503 `draining` from now
   * on, the workers stop claiming, the claims in progress end (each releases its lease with its last commit; none is
   * left to expire) and this process's definition set is withdrawn. Requests are still served; `close()` follows.
   */
  drainWorker(): Promise<void>;
  /** Processes all claimable work until nothing is left; resolves with the number of claims run. */
  drain(): Promise<number>;
  /** One watchdog pass (what `POST /v1/watchdog/tick` runs). */
  tick(): Promise<WatchdogTickResult>;
  /** Stops the loops, writes the tool registry's batched call counts, closes the store. */
  close(): Promise<void>;
}

/**
 * Refuses with a `DefinitionError` (its `key` names the option): no agents,
 * an unknown option key, `concurrency` below 1 or not an integer, an invalid
 * `auth`, and the guardian and assignment errors of verdicts/registry.ts.
 *
 * @example
 * const gh = createGatehouse({ agents: [support] });
 * const res = await gh.fetch(new Request("http://x/v1/agents/a1/tasks", {
 *   method: "POST", headers: { "content-type": "application/json" },
 *   body: JSON.stringify({ agent: "support", input: "hello" }),
 * }));
 * await gh.drain();
 */
export function createGatehouse(options: GatehouseOptions): Gatehouse {
  if (options?.inline && onWorkers()) {
    throw new DefinitionError(
      "createGatehouse({ inline: true }) cannot run on Cloudflare Workers: work after the response is dropped " +
        "unless it runs in ctx.waitUntil, and the agent would sit under its lease. Use createWorkersHandler()",
      { key: "inline" },
    );
  }
  return buildGatehouse(options).gatehouse;
}

/** How a runtime entry drives work, for buildGatehouse(). */
export interface GatehouseHooks {
  /**
   * Replaces the default wake (nudge the pool, or drain inline): called when
   * a request enqueued work, with the agent whose bell rang (none: any due
   * agent, after a watchdog tick) and the request that rang it.
   */
  wake?: (agentId: string | undefined, request: Request | undefined) => void;
  /** Most tool calls one watchdog pass times out (default 100); each is one store call. */
  watchdogLimit?: number;
  /** Serve the stored agents without definitions (createReplayGatehouse: a recorded run, read-only without them). */
  allowNoAgents?: boolean;
  /**
   * Longest wait before the tool registry's batched call counts are written
   * (actors/registry/writer.ts; default 5 000 ms); null: only on
   * `registryWriter.flush()`, `stopWorker()` and `close()` (Workers flush at the end of each drive).
   */
  registryFlushMs?: number | null;
  /**
   * The live channel to use instead of the store's (store/live.ts):
   * createWorkersHandler passes an in-process one, so deltas stay within the
   * invocation and cost no subrequests. Event streams then poll.
   */
  live?: LiveChannel;
}

/** A gatehouse and the parts a runtime entry drives it with. */
export interface BuiltGatehouse {
  gatehouse: Gatehouse;
  deps: HostDeps;
  targets: string[];
  ids: IdSource;
}

/** The engine's parts: the metered store, the verdict log, the registry writer, the live channel and what the host is given. */
function engineParts(options: GatehouseOptions, checked: CheckedOptions, hooks: GatehouseHooks) {
  const { agents, guardians } = checked;
  const baseStore = options.store ?? memoryStore();
  const metrics = createMetrics();
  // Workers, watchdog and routes write through the metered store (actors/observe/metrics.ts).
  const store = meteredStore(baseStore, metrics);
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const verdicts = createVerdictLog({ store, registry: guardians });
  const verification: VerificationHooks = {
    guardians: guardians.guardiansFor,
    verdicts: verdictRecorder({ log: verdicts, registry: guardians, clock }),
    ...options.verification,
  };
  // One writer per instance: a (role, method) is written once at its first call, later calls in batches.
  const registryWriter = createRegistryWriter({ store, clock, logger, flushMs: hooks.registryFlushMs });
  // The store's own channel hears every commit on the store; any other reaches this process only.
  const live = hooks.live ?? baseStore.live ?? processLive();
  const deps: HostDeps = {
    store, agents, versions: checked.versions, liveSets: { others: [] }, clock, logger, live,
    registryWriter,
    cache: lruCache(),
    keptResults: keptResults(),
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    metrics,
    inspect: options.inspect,
    verification,
    externalToolTimeoutMs: options.externalToolTimeoutMs ?? DEFAULTS.externalToolTimeoutMs,
    toolTimeoutMs: options.toolTimeoutMs ?? DEFAULTS.toolTimeoutMs,
    verifierBackoffMs: options.verifierBackoffMs ?? DEFAULTS.verifierBackoffMs,
    jsonLimits: checked.jsonLimits,
    maxClaimFailures: options.maxClaimFailures ?? DEFAULTS.maxClaimFailures,
    claimRetryBackoffMs: options.claimRetryBackoffMs ?? DEFAULTS.claimRetryBackoffMs,
    maxChainedTurns: options.maxChainedTurns ?? DEFAULT_MAX_CHAINED_TURNS,
    ...(options.delegation ? { delegation: { ...options.delegation } } : {}),
    retention: checked.retention,
    ...(options.memory ? { memory: options.memory } : {}),
    // The limits every claim and chaining commit of this process keeps (store/port.ts invariant `concurrency-keys`).
    ...(options.concurrencyLimits ? { concurrencyLimits: Object.freeze({ ...options.concurrencyLimits }) } : {}),
  };
  return { deps, baseStore, verdicts, metrics, registryWriter, livePushes: live === baseStore.live };
}

/** The worker pool and the watchdog loop of `startWorker()`, each waking the other. */
function workerParts(options: GatehouseOptions, deps: HostDeps, targets: string[], ids: IdSource, hooks: GatehouseHooks) {
  const { store, clock, logger } = deps;
  const pool: WorkerPool = createWorkerPool(deps, {
    targets,
    concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
    drainConcurrency: options.concurrency ?? DEFAULT_DRAIN_CONCURRENCY,
    pollMs: options.pollMs ?? DEFAULT_POLL_MS,
    idlePollMaxMs: options.idlePollMaxMs ??
      Math.max(options.pollMs ?? DEFAULT_POLL_MS, store.kind === "redis" ? DEFAULT_IDLE_POLL_MAX_MS_TCP : DEFAULT_IDLE_POLL_MAX_MS),
    onClaim: () => watchdog.soon(),
    workerId: () => ids.workerId(),
    turnId: () => ids.turnId(),
  });
  const tick = () => watchdogTick(store, clock, hooks.watchdogLimit ?? DEFAULTS.watchdogLimit, { logger });
  const watchdog: WatchdogLoop = createWatchdogLoop({
    store,
    clock,
    logger,
    tick,
    onTimedOut: () => pool.nudge(),
    intervalMs: options.watchdogIntervalMs ?? DEFAULTS.watchdogIntervalMs,
    idleMaxMs: options.watchdogIdleMaxMs ?? DEFAULT_WATCHDOG_IDLE_MAX_MS,
  });
  return { pool, watchdog, tick };
}

/** What the routes run against (routes/runtime.ts): the store behind its deadline, the limits, and the wakes. */
function routeRuntime(
  options: GatehouseOptions,
  checked: CheckedOptions,
  parts: { deps: HostDeps; metrics: Metrics; targets: string[]; ids: IdSource; livePushes: boolean; pool: WorkerPool; draining: { on: boolean } },
  hooks: GatehouseHooks,
): RouteRuntime {
  const { deps: { store, clock, logger, live }, metrics, targets, ids, pool } = parts;
  const routeStore = storeWithDeadline(store, checked.storeTimeoutMs);
  const runtime: RouteRuntime = {
    store: routeStore, agents: checked.agents, versions: checked.versions, liveSets: parts.deps.liveSets, draining: parts.draining, clock, ids, logger, guardians: checked.guardians,
    metrics,
    workerTargets: targets,
    limits: {
      maxBodyBytes: options.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
      json: checked.jsonLimits,
      maxEventPage: 500,
      maxEventPageBytes: options.maxEventPageBytes ?? DEFAULT_EVENT_PAGE_BYTES,
      ...(options.whatIfMaxCandidates !== undefined ? { maxWhatIfCandidates: options.whatIfMaxCandidates } : {}),
      maxDelayedTasks: options.maxDelayedTasks ?? DEFAULT_MAX_DELAYED_TASKS,
      maxSchedulesPerAgent: options.maxSchedulesPerAgent ?? DEFAULTS.maxSchedulesPerAgent,
    },
    wake(agentId, request) {
      if (hooks.wake) hooks.wake(agentId, request);
      else if (pool.running) pool.nudge();
      else if (options.inline) {
        pool.drain().catch((err) => logger.error("inline drain failed", { error: String(err) }));
      }
    },
    // The worker pool's hand-over (actors/pool/pool.ts): with a free loop, the enqueue and its claim in one round trip.
    ...(hooks.wake ? {} : {
      async enqueueTask(req: EnqueueTaskRequest) {
        if (!pool.running) return { result: await routeStore.enqueueTask(req), rung: false };
        const { result, handed } = await withDeadline(() => pool.enqueue(req, routeStore), store.kind, checked.storeTimeoutMs, "enqueueTask");
        return { result, rung: handed };
      },
    }),
    async watchdogTick(request) {
      const r = await watchdogTick(routeStore, clock, hooks.watchdogLimit ?? DEFAULTS.watchdogLimit, { logger });
      runtime.wake(undefined, request);
      return r;
    },
    live,
    livePushes: parts.livePushes,
    maxWaitSeconds: checked.maxWaitSeconds,
    ...(options.concurrencyLimits !== undefined ? { concurrencyLimits: { ...options.concurrencyLimits } } : {}),
    ...(options.metricsLanes !== undefined ? { metricsLanes: options.metricsLanes } : {}),
    ...sseRuntime(options),
    ...(options.auth ? { auth: copyAuth(options.auth) } : {}),
    rateLimits: resolveRateLimits(options.rateLimits, options.auth !== undefined),
  };
  return runtime;
}

/** The event stream settings of the route runtime. */
function sseRuntime(options: GatehouseOptions): Pick<RouteRuntime, "ssePollMs" | "sseKeepAliveMs" | "sseLimits" | "sseMaxReads" | "sseRetryMs"> {
  return {
    ssePollMs: options.sse?.pollMs ?? DEFAULTS.ssePollMs,
    sseKeepAliveMs: options.sse?.keepAliveMs ?? DEFAULTS.sseKeepAliveMs,
    sseLimits: {
      ...(options.sse?.maxStreamsPerAgent !== undefined ? { maxStreamsPerAgent: options.sse.maxStreamsPerAgent } : {}),
      ...(options.sse?.maxStreams !== undefined ? { maxStreams: options.sse.maxStreams } : {}),
    },
    ...(options.sse?.maxReads !== undefined ? { sseMaxReads: options.sse.maxReads } : {}),
    ...(options.sse?.retryMs !== undefined ? { sseRetryMs: options.sse.retryMs } : {}),
  };
}

/** createGatehouse() with hooks for runtime entries (workers.ts); not part of the public API. */
export function buildGatehouse(options: GatehouseOptions, hooks: GatehouseHooks = {}): BuiltGatehouse {
  const checked = checkGatehouseOptions(options, hooks.allowNoAgents === true);
  const { agents, guardians } = checked;
  const { deps, baseStore, verdicts, metrics, registryWriter, livePushes } = engineParts(options, checked, hooks);
  const ids = options.ids ?? randomIds;
  const targets = options.workerTargets ?? [...new Set([...agents.values()].map((a) => a.workerTarget))];
  const { pool, watchdog, tick } = workerParts(options, deps, targets, ids, hooks);
  const draining = { on: false };
  const { logger } = deps;
  const app = createApp(routeRuntime(options, checked, { deps, metrics, targets, ids, livePushes, pool, draining }, hooks));
  const { store } = deps;
  const gatehouse: Gatehouse = {
    app,
    fetch: (req: Request) => Promise.resolve(app.fetch(req)),
    store: baseStore,
    agents,
    guardians,
    verdicts,
    startWorker() {
      pool.start();
      watchdog.start();
    },
    async stopWorker() {
      watchdog.stop();
      await pool.stop();
      await registryWriter.stop();
    },
    async drainWorker() {
      draining.on = true;
      logger.info("draining", { agents: [...agents.keys()] });
      watchdog.stop();
      await pool.stop();
      await registryWriter.stop();
    },
    drain: () => pool.drain(),
    tick,
    async close() {
      watchdog.stop();
      await pool.stop();
      await registryWriter.stop();
      await store.close();
    },
  };
  return { gatehouse, deps, targets, ids };
}
