/**
 * createGatehouse(): wires agents, a store, the worker pool, the watchdog and
 * the Hono app. Reads no environment: runtime entry files (entry/) do that.
 *
 * Construction does no I/O, starts no timer and draws no random value (the
 * worker id is drawn on first use): Cloudflare Workers refuse randomness
 * outside a handler, and an instance built at module scope must still start.
 */
import type { InspectionEvent, Observer } from "xstate";
import type { AnyAgent } from "./agents/define.ts";
import { withDelegates } from "./agents/agent-tool.ts";
import { checkHandoffTargets } from "./agents/handoff.ts";
import { checkDelegationSettings, type DelegationSettings } from "./actors/delegation/delegation.ts";
import { DefinitionError } from "./errors/errors.ts";
import { onWorkers } from "./common/runtime.ts";
import { DEFAULTS } from "./common/defaults.ts";
import { type JsonLimits, jsonLimits } from "./common/json-bounds.ts";
import { lruCache } from "./actors/conversation/cache.ts";
import { keptResults } from "./actors/claim/kept-results.ts";
import type { HostDeps } from "./actors/claim/context.ts";
import { type Clock, type IdSource, type Logger, randomIds, silentLogger, systemClock } from "./actors/runtime.ts";
import { createMetrics, meteredStore } from "./actors/observe/metrics.ts";
import { watchdogTick, type WatchdogTickResult } from "./actors/pool/watchdog.ts";
import { createWatchdogLoop } from "./actors/pool/watchdog-loop.ts";
import { createWorkerPool } from "./actors/pool/pool.ts";
import { createRegistryWriter } from "./actors/registry/writer.ts";
import { createApp } from "./routes/app.ts";
import type { GatehouseApp } from "./routes/app-type.gen.ts";
import { DEFAULT_EVENT_PAGE_BYTES } from "./routes/events.ts";
import { DEFAULT_MAX_WAIT_SECONDS } from "./routes/prefer-wait.ts";
import { checkAuthConfig } from "./routes/auth.ts";
import { copyAuth } from "./routes/auth/config.ts";
import { checkRateLimitOptions, type RateLimitOptions, resolveRateLimits } from "./routes/rate-limit.ts";
import type { RouteAuth, RouteRuntime } from "./routes/runtime.ts";
import { memoryStore } from "./store/memory.ts";
import { type LiveChannel, processLive } from "./store/live.ts";
import type { RetentionLimits, Store } from "./store/port.ts";
import { resolveRetention } from "./store/retention.ts";
import { closestKey, firstUnknownKey } from "./common/known-keys.ts";
import { DEFAULT_MAX_DELAYED_TASKS } from "./store/delayed-bound.ts";
import { type AgentRetention, checkMemoryPolicy, checkRetention, type MemoryPolicy } from "./agents/memory-policy.ts";
import { DEFAULT_MAX_CHAINED_TURNS, retentionOf } from "./actors/claim/context.ts";
import { storeWithDeadline } from "./store/outage.ts";
import type { VerificationHooks } from "./verification/gate.ts";
import { verdictRecorder } from "./verification/recorder.ts";
import type { Guardian } from "./verdicts/guardian.ts";
import { createVerdictLog, type VerdictLog } from "./verdicts/log.ts";
import { createGuardianRegistry, type GuardianRegistry } from "./verdicts/registry.ts";

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

export interface GatehouseOptions {
  agents: AnyAgent[];
  /** Default: memoryStore(). */
  store?: Store;
  clock?: Clock;
  ids?: IdSource;
  logger?: Logger;
  /** Worker targets this process consumes (default: every target of `agents`). */
  workerTargets?: string[];
  /**
   * Concurrent worker loops per process (default DEFAULT_CONCURRENCY, 64). Also the claims `drain()`
   * runs at once when set; unset, a drain runs DEFAULT_DRAIN_CONCURRENCY (4).
   */
  concurrency?: number;
  /**
   * Lease of one claim in ms (default DEFAULT_LEASE_MS, 15 000); renewed every
   * third of it while the claim runs. A crashed worker's agents resume about
   * one lease after its last renewal (docs/operations.md, "Leases and takeover").
   */
  leaseMs?: number;
  /**
   * First idle wait of the worker pool in ms (default 100), and its wait
   * again after any claim or in-process wake (docs/operations.md, "Idle cost").
   */
  pollMs?: number;
  /**
   * Longest idle wait of the worker pool in ms while it polls (default 5 000; 1 000 on TCP Redis): the
   * wait doubles from `pollMs` up to it while nothing is claimable. Work enqueued by this
   * process wakes the pool at once and a `runnableAt` or lease end is never
   * slept past; work enqueued by another process is found within this bound.
   * On TCP Redis bells are pushed and an idle pool does not poll: this bound
   * applies only while the connection that hears them is down.
   */
  idlePollMaxMs?: number;
  /** Watchdog interval of `startWorker()` in ms (default 1 000), and its wait while a deadline is near. */
  watchdogIntervalMs?: number;
  /**
   * Longest idle wait of the watchdog of `startWorker()` in ms (default 30 000):
   * it doubles from `watchdogIntervalMs` while no deadline falls within it.
   */
  watchdogIdleMaxMs?: number;
  /** Largest request body in bytes (default 256 KiB). */
  maxBodyBytes?: number;
  /**
   * Bounds of every JSON value from outside: request bodies (400
   * `json_limit_exceeded` above them), model tool-call arguments and
   * in-process tool results. Defaults: depth 64 (at most 256), strings of
   * 262 144 characters, 10 000 items per array or object.
   */
  jsonLimits?: Partial<JsonLimits>;
  /** Default resume deadline of external tool calls in ms (default 10 min). */
  externalToolTimeoutMs?: number;
  /** Default timeout of in-process tools in ms (default 60 s). */
  toolTimeoutMs?: number;
  /** Base backoff after a verifier system error in ms (default 1 000, doubled per error). */
  verifierBackoffMs?: number;
  /**
   * Claims of one turn that may throw an unexpected error before the turn
   * ends `failed` with reason `claim_error` and the tasks behind it proceed
   * (default 5). A store outage does not count.
   */
  maxClaimFailures?: number;
  /** Backoff after a claim that threw, in ms (default 1 000, doubled per failure up to 32x). */
  claimRetryBackoffMs?: number;
  /**
   * Turns one claim may start in a row through the commit that ends the
   * previous turn (turn chaining, docs/architecture.md) before the agent is
   * handed back to the ready queue, behind the agents already waiting
   * (default 8; 0: every turn starts with its own claim).
   */
  maxChainedTurns?: number;
  /**
   * Delegation (agentTool()): `maxDepth` bounds nesting (default 3); `pollMs` is how often a parent
   * waiting on a child is claimed again to re-dispatch it and pull its result after a crash (default 30 000).
   */
  delegation?: DelegationSettings;
  /**
   * Storage limits of every agent, applied by the commit that ends a turn
   * (store/retention.ts; an agent's own `retention` is laid over them).
   * Defaults: 10 000 events, 4 MiB of event JSON, the records of 200 ended
   * turns, a checkpoint every 2 500 events. `false` keeps everything.
   */
  retention?: AgentRetention | false;
  /**
   * The model's memory for agents without their own `memory`: the last
   * `keepTurns` turns plus a rolling summary (actors/conversation/memory.ts). Default:
   * every retained message.
   */
  memory?: MemoryPolicy;
  /**
   * XState inspection for every actor this process runs: a callback or an
   * observer, e.g. `createBrowserInspector().inspect` of @statelyai/inspect
   * (docs/debugging.md).
   */
  inspect?: ((event: InspectionEvent) => void) | Observer<InspectionEvent>;
  /**
   * Process work inline after each accepted request (serverless without a
   * worker). Refused on Cloudflare Workers, where work running after the
   * response is dropped unless it is in `ctx.waitUntil`: use
   * createWorkersHandler() there.
   */
  inline?: boolean;
  /**
   * Verifier gate hooks, laid over the defaults (guardians from the registry,
   * verdicts written to the store); `{ verdicts: null }` writes none.
   */
  verification?: VerificationHooks;
  /** More guardians to register (defineGuardian()); assign them with `assignments`. */
  guardians?: Guardian[];
  /** Assigns registered guardians to agents by name; they review after the agent's own guardians. */
  assignments?: Array<{ agent: string; guardian: string }>;
  /**
   * Longest wait for the store in a request handler, in ms (default 3 000):
   * past it, or when the store is unreachable, the request answers 503
   * `store_unavailable` with `Retry-After`. Workers are not bounded by it.
   */
  storeTimeoutMs?: number;
  /**
   * Auth of every route but `/healthz` and `/readyz` (off by default): scoped
   * bearer tokens, Standard Webhooks secrets and QStash signing keys
   * (routes/auth.ts, docs/security.md). Once set, it fails closed.
   */
  auth?: RouteAuth;
  /**
   * Rate limits per token and per agent, held in the store so they hold
   * across processes; 429 `rate_limited` with `Retry-After` beyond them
   * (routes/rate-limit.ts, docs/security.md). Default: on when `auth` is
   * set (1 200 requests a minute per token, 600 per agent), off without it;
   * `false` turns them off, `{ perAgent: false }` one bucket.
   */
  rateLimits?: RateLimitOptions | false;
  /**
   * Event streams: store poll interval (default 250 ms), idle keep-alive
   * interval (default 15 000 ms), caps on open streams per agent (default
   * 8) and per process (default 1 000), 429 beyond them, and `maxReads`, the
   * store reads after which a stream ends with a `retry:` field so the client
   * reconnects with `Last-Event-ID` (default: unbounded; createWorkersHandler
   * sets 40, to stay within a Worker's subrequest limit), and that `retry:`
   * value (`retryMs`, default 1 000).
   */
  sse?: {
    pollMs?: number;
    keepAliveMs?: number;
    maxStreamsPerAgent?: number;
    maxStreams?: number;
    maxReads?: number;
    retryMs?: number;
  };
  /** Byte budget of one events page (default 1 MiB; a page always holds at least one event). */
  maxEventPageBytes?: number;
  /**
   * Candidates one `POST .../what-if` judges at most (1 to 1 000, default
   * 20): each may call a verifier that is a paid model. The rest are left to
   * the next request (`stopped: "candidate_cap"`, `nextAfter`; docs/security.md).
   */
  whatIfMaxCandidates?: number;
  /**
   * Delayed tasks (`delayMs`/`runAt`, not yet due) one agent may hold (a
   * whole number from 0, default 10 000): one more is refused with 429
   * `too_many_delayed_tasks` and changes nothing (docs/security.md).
   */
  maxDelayedTasks?: number;
  /**
   * Longest `Prefer: wait=<seconds>` that `POST /v1/agents/:agentId/tasks`
   * honours (a larger wait is cut to it; 0 turns waiting off). Default 60.
   */
  maxWaitSeconds?: number;
}

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
  /** Processes all claimable work until nothing is left; resolves with the number of claims run. */
  drain(): Promise<number>;
  /** One watchdog pass (what `POST /v1/watchdog/tick` runs). */
  tick(): Promise<WatchdogTickResult>;
  /** Stops the loops, writes the tool registry's batched call counts, closes the store. */
  close(): Promise<void>;
}

/**
 * Every option `createGatehouse` takes. `satisfies` keeps this list and
 * `GatehouseOptions` in step: an option added to one and not the other fails
 * the type check.
 */
const OPTION_KEYS: readonly string[] = Object.keys(
  {
    agents: true,
    store: true,
    clock: true,
    ids: true,
    logger: true,
    workerTargets: true,
    concurrency: true,
    leaseMs: true,
    pollMs: true,
    idlePollMaxMs: true,
    watchdogIntervalMs: true,
    watchdogIdleMaxMs: true,
    maxBodyBytes: true,
    maxEventPageBytes: true,
    whatIfMaxCandidates: true,
    maxDelayedTasks: true,
    jsonLimits: true,
    maxClaimFailures: true,
    claimRetryBackoffMs: true,
    maxChainedTurns: true,
    delegation: true,
    retention: true,
    memory: true,
    storeTimeoutMs: true,
    externalToolTimeoutMs: true,
    toolTimeoutMs: true,
    verifierBackoffMs: true,
    inspect: true,
    inline: true,
    verification: true,
    guardians: true,
    assignments: true,
    auth: true,
    rateLimits: true,
    sse: true,
    maxWaitSeconds: true,
  } satisfies Record<keyof GatehouseOptions, true>,
);

/**
 * Option checks, before anything is built: only known keys (a misspelt
 * option would otherwise be silently ignored), and `concurrency` an integer
 * of at least 1 (0 worker loops would accept tasks and never run them).
 */
function checkOptions(options: GatehouseOptions): void {
  const k = firstUnknownKey(options, OPTION_KEYS);
  if (k !== null) {
    const near = closestKey(k, OPTION_KEYS);
    throw new DefinitionError(
      `createGatehouse(): unknown option "${k}"${near ? ` (did you mean "${near}"?)` : ""}; it takes ${OPTION_KEYS.join(", ")}`,
      { key: k },
    );
  }
  const c = options.concurrency;
  if (c !== undefined && (typeof c !== "number" || !Number.isInteger(c) || c < 1)) {
    throw new DefinitionError(`createGatehouse(): concurrency must be an integer of at least 1, got ${JSON.stringify(c) ?? String(c)}`, {
      key: "concurrency",
    });
  }
}

/** The `Prefer: wait` cap, checked: whole seconds from 0 to 3 600. */
function maxWaitSeconds(v: number | undefined): number {
  if (v === undefined) return DEFAULT_MAX_WAIT_SECONDS;
  if (!Number.isSafeInteger(v) || v < 0 || v > 3_600) {
    throw new DefinitionError(`createGatehouse(): maxWaitSeconds must be an integer from 0 to 3600, got ${v}`, { key: "maxWaitSeconds" });
  }
  return v;
}

/**
 * The process's retention limits (null: `retention: false`), checked, and
 * each agent's memory policy checked against its limits: a model view of
 * more turns than the store keeps would lose turns before they are summarized.
 */
function retentionOption(options: GatehouseOptions, agents: ReadonlyMap<string, AnyAgent>): RetentionLimits | null {
  if (options.retention !== false) {
    const e = checkRetention(options.retention);
    if (e) throw new DefinitionError(`createGatehouse(): ${e.message}`, { key: e.key });
  }
  const memoryError = checkMemoryPolicy(options.memory);
  if (memoryError) throw new DefinitionError(`createGatehouse(): ${memoryError.message}`, { key: memoryError.key });
  const base = options.retention === false ? null : resolveRetention(options.retention);
  for (const a of agents.values()) {
    const limits = retentionOf({ retention: base }, a);
    const memory = a.memory ?? options.memory;
    if (limits && memory && memory.keepTurns > limits.maxTurns) {
      throw new DefinitionError(
        `Agent "${a.name}": memory.keepTurns (${memory.keepTurns}) is more than retention.maxTurns (${limits.maxTurns}); the store would drop turns the model still sees`,
        { key: "memory" },
      );
    }
  }
  return base;
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

/** createGatehouse() with hooks for runtime entries (workers.ts); not part of the public API. */
export function buildGatehouse(options: GatehouseOptions, hooks: GatehouseHooks = {}): BuiltGatehouse {
  if (!options || typeof options !== "object") throw new DefinitionError("createGatehouse() needs an options object");
  checkOptions(options);
  if (!Array.isArray(options.agents) || (options.agents.length === 0 && !hooks.allowNoAgents)) {
    throw new DefinitionError("createGatehouse() needs at least one agent in `agents`", { key: "agents" });
  }
  const agents = new Map<string, AnyAgent>();
  for (const a of options.agents) {
    if (!a || a.kind !== "agent") throw new DefinitionError("agents must come from defineAgent()", { key: "agents" });
    if (agents.has(a.name)) throw new DefinitionError(`Two agents are named "${a.name}"`, { key: "agents" });
    agents.set(a.name, a);
  }
  // The agents that agent tools delegate to are served too (agents/agent-tool.ts).
  for (const a of withDelegates(agents.values())) agents.set(a.name, a);
  // Handoff targets are not added: each must be registered here itself (agents/handoff.ts).
  checkHandoffTargets(agents);
  checkDelegationSettings(options.delegation);
  for (const k of ["maxClaimFailures", "claimRetryBackoffMs", "maxChainedTurns"] as const) {
    const v = options[k];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < (k === "maxClaimFailures" ? 1 : 0))) {
      throw new DefinitionError(
        `createGatehouse(): ${k} must be a non-negative integer${k === "maxClaimFailures" ? " of at least 1" : ""}`,
        { key: k },
      );
    }
  }
  if (options.auth !== undefined) {
    const e = checkAuthConfig(options.auth);
    if (e) throw new DefinitionError(`createGatehouse(): ${e}`, { key: "auth" });
  }
  if (options.rateLimits !== undefined) {
    const e = checkRateLimitOptions(options.rateLimits);
    if (e) throw new DefinitionError(`createGatehouse(): ${e}`, { key: "rateLimits" });
  }
  const mdt = options.maxDelayedTasks;
  if (mdt !== undefined && !(Number.isSafeInteger(mdt) && mdt >= 0)) {
    throw new DefinitionError(`createGatehouse(): maxDelayedTasks must be a whole number from 0, got ${mdt}`, { key: "maxDelayedTasks" });
  }
  const wmc = options.whatIfMaxCandidates;
  if (wmc !== undefined && !(Number.isSafeInteger(wmc) && wmc >= 1 && wmc <= 1_000)) {
    throw new DefinitionError(`createGatehouse(): whatIfMaxCandidates must be an integer from 1 to 1000, got ${wmc}`, {
      key: "whatIfMaxCandidates",
    });
  }
  const { maxReads, retryMs } = options.sse ?? {};
  if (maxReads !== undefined && !(Number.isInteger(maxReads) && maxReads >= 1)) {
    throw new DefinitionError(`createGatehouse(): sse.maxReads must be a positive integer, got ${maxReads}`, { key: "sse.maxReads" });
  }
  if (retryMs !== undefined && !(Number.isFinite(retryMs) && retryMs >= 0)) {
    throw new DefinitionError(`createGatehouse(): sse.retryMs must be a number of milliseconds >= 0, got ${retryMs}`, {
      key: "sse.retryMs",
    });
  }
  const retention = retentionOption(options, agents);
  let limits: JsonLimits;
  try {
    limits = jsonLimits(options.jsonLimits);
  } catch (err) {
    throw new DefinitionError(`createGatehouse(): jsonLimits.${(err as Error).message}`);
  }
  const baseStore = options.store ?? memoryStore();
  const metrics = createMetrics();
  // Workers, watchdog and routes write through the metered store (actors/observe/metrics.ts).
  const store = meteredStore(baseStore, metrics);
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? randomIds;
  const logger = options.logger ?? silentLogger;
  const targets = options.workerTargets ?? [...new Set([...agents.values()].map((a) => a.workerTarget))];
  const guardians = createGuardianRegistry({
    agents: agents.values(),
    guardians: options.guardians,
    assignments: options.assignments,
  });
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
  const livePushes = live === baseStore.live;
  const deps: HostDeps = {
    store, agents, clock, logger, live,
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
    jsonLimits: limits,
    maxClaimFailures: options.maxClaimFailures ?? DEFAULTS.maxClaimFailures,
    claimRetryBackoffMs: options.claimRetryBackoffMs ?? DEFAULTS.claimRetryBackoffMs,
    maxChainedTurns: options.maxChainedTurns ?? DEFAULT_MAX_CHAINED_TURNS,
    ...(options.delegation ? { delegation: { ...options.delegation } } : {}),
    retention,
    ...(options.memory ? { memory: options.memory } : {}),
  };
  const pool = createWorkerPool(deps, {
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
  const watchdog = createWatchdogLoop({
    store,
    clock,
    logger,
    tick,
    onTimedOut: () => pool.nudge(),
    intervalMs: options.watchdogIntervalMs ?? DEFAULTS.watchdogIntervalMs,
    idleMaxMs: options.watchdogIdleMaxMs ?? DEFAULT_WATCHDOG_IDLE_MAX_MS,
  });
  const storeTimeoutMs = options.storeTimeoutMs ?? DEFAULTS.storeTimeoutMs;
  if (!Number.isSafeInteger(storeTimeoutMs) || storeTimeoutMs < 1) {
    throw new DefinitionError("createGatehouse(): storeTimeoutMs must be a positive integer");
  }
  const routeStore = storeWithDeadline(store, storeTimeoutMs);

  const runtime: RouteRuntime = {
    store: routeStore, agents, clock, ids, logger, guardians,
    metrics,
    workerTargets: targets,
    limits: {
      maxBodyBytes: options.maxBodyBytes ?? DEFAULTS.maxBodyBytes,
      json: limits,
      maxEventPage: 500,
      maxEventPageBytes: options.maxEventPageBytes ?? DEFAULT_EVENT_PAGE_BYTES,
      ...(wmc !== undefined ? { maxWhatIfCandidates: wmc } : {}),
      maxDelayedTasks: mdt ?? DEFAULT_MAX_DELAYED_TASKS,
    },
    wake(agentId, request) {
      if (hooks.wake) hooks.wake(agentId, request);
      else if (pool.running) pool.nudge();
      else if (options.inline) {
        pool.drain().catch((err) => logger.error("inline drain failed", { error: String(err) }));
      }
    },
    async watchdogTick(request) {
      const r = await watchdogTick(routeStore, clock, hooks.watchdogLimit ?? DEFAULTS.watchdogLimit, { logger });
      runtime.wake(undefined, request);
      return r;
    },
    live,
    livePushes,
    maxWaitSeconds: maxWaitSeconds(options.maxWaitSeconds),
    ssePollMs: options.sse?.pollMs ?? DEFAULTS.ssePollMs,
    sseKeepAliveMs: options.sse?.keepAliveMs ?? DEFAULTS.sseKeepAliveMs,
    sseLimits: {
      ...(options.sse?.maxStreamsPerAgent !== undefined ? { maxStreamsPerAgent: options.sse.maxStreamsPerAgent } : {}),
      ...(options.sse?.maxStreams !== undefined ? { maxStreams: options.sse.maxStreams } : {}),
    },
    ...(options.sse?.maxReads !== undefined ? { sseMaxReads: options.sse.maxReads } : {}),
    ...(options.sse?.retryMs !== undefined ? { sseRetryMs: options.sse.retryMs } : {}),
    ...(options.auth ? { auth: copyAuth(options.auth) } : {}),
    rateLimits: resolveRateLimits(options.rateLimits, options.auth !== undefined),
  };
  const app = createApp(runtime);

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
