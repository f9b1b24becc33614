/**
 * The options of createGatehouse() and their checks, before anything is
 * built: every option is known, in range and consistent with the agents,
 * or a `DefinitionError` whose `key` names the option; nothing is built, no
 * store is touched. `gatehouse.ts` builds from what `checkGatehouseOptions`
 * answers; `workers.ts` checks a Worker's options with it at module scope.
 */
import type { InspectionEvent, Observer } from "xstate";
import type { AnyAgent } from "./agents/define.ts";
import { withDelegates } from "./agents/agent-tool.ts";
import { checkHandoffTargets } from "./agents/handoff.ts";
import { type AgentRetention, checkMemoryPolicy, checkRetention, type MemoryPolicy } from "./agents/memory-policy.ts";
import { checkDelegationSettings, type DelegationSettings } from "./actors/delegation/delegation.ts";
import { retentionOf } from "./actors/claim/context.ts";
import type { Clock, IdSource, Logger } from "./actors/runtime.ts";
import { DefinitionError } from "./errors/errors.ts";
import { DEFAULTS } from "./common/defaults.ts";
import { type JsonLimits, jsonLimits } from "./common/json-bounds.ts";
import { closestKey, firstUnknownKey } from "./common/known-keys.ts";
import { concurrencyLimitsProblem, MAX_METRICS_LANES } from "./common/concurrency.ts";
import { DEFAULT_MAX_WAIT_SECONDS } from "./routes/prefer-wait.ts";
import { checkAuthConfig } from "./routes/auth.ts";
import { checkRateLimitOptions, type RateLimitOptions } from "./routes/rate-limit.ts";
import type { RouteAuth } from "./routes/runtime.ts";
import type { RetentionLimits, Store } from "./store/port.ts";
import { resolveRetention } from "./store/retention.ts";
import type { VerificationHooks } from "./verification/gate.ts";
import type { Guardian } from "./verdicts/guardian.ts";
import { createGuardianRegistry, type GuardianRegistry } from "./verdicts/registry.ts";

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
   * Concurrency limits by key (docs/operations.md, "Concurrency and fairness"; store/port.ts invariant
   * `concurrency-keys`): `{ "user:42": 5, "*": 10 }` lets at most 5 turns of tasks with key `user:42`,
   * and at most 10 of each other key, run at once across every process; `"*"` is the limit of keys not
   * named; no entry, no limit (tasks without a key have none). Limits are whole numbers from 1 to
   * 1 000 000; keys are concurrency keys (common/concurrency.ts). Every process of a deployment should
   * give the same. Env: `GATEHOUSE_CONCURRENCY_LIMITS` (JSON).
   */
  concurrencyLimits?: Readonly<Record<string, number>>;
  /**
   * Lanes `/metrics` reports one by one (`gatehouse_lane_running`, `gatehouse_lane_queued`; 0 to 1 000,
   * default 20): the busiest; the others are summed under `key="_other"`.
   */
  metricsLanes?: number;
  /**
   * Schedules one agent may hold (1 to 10 000, default 100): a new schedule
   * past it is 409 `schedule_limit` and stores nothing (store/port.ts
   * invariant `schedule-bounds`; docs/security.md, "Schedules").
   */
  maxSchedulesPerAgent?: number;
  /**
   * Longest `Prefer: wait=<seconds>` that `POST /v1/agents/:agentId/tasks`
   * honours (a larger wait is cut to it; 0 turns waiting off). Default 60.
   */
  maxWaitSeconds?: number;
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
    concurrencyLimits: true,
    metricsLanes: true,
    maxSchedulesPerAgent: true,
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

/** What the checks answer: the values buildGatehouse builds from. */
export interface CheckedOptions {
  /** The agents by name, the agents their agent tools delegate to included. */
  agents: Map<string, AnyAgent>;
  /** Per name, every version listed, current first (actors/host/versions.ts). */
  versions: Map<string, AnyAgent[]>;
  /** Guardians and their assignments, checked against the agents. */
  guardians: GuardianRegistry;
  /** The process's retention limits; null: `retention: false`. */
  retention: RetentionLimits | null;
  jsonLimits: JsonLimits;
  storeTimeoutMs: number;
  /** The `Prefer: wait` cap. */
  maxWaitSeconds: number;
}

/**
 * The agents by name, each from defineAgent(), their delegates added and their handoff targets checked. A name
 * may be listed with several versions (agents/version.ts): the first listed is current and is the one in the map;
 * every version is in `versions`, current first. The same (name, version) twice is refused.
 */
function checkAgents(options: GatehouseOptions, allowNoAgents: boolean): { agents: Map<string, AnyAgent>; versions: Map<string, AnyAgent[]> } {
  if (!Array.isArray(options.agents) || (options.agents.length === 0 && !allowNoAgents)) {
    throw new DefinitionError("createGatehouse() needs at least one agent in `agents`", { key: "agents" });
  }
  const agents = new Map<string, AnyAgent>();
  const versions = new Map<string, AnyAgent[]>();
  for (const a of options.agents) {
    if (!a || a.kind !== "agent") throw new DefinitionError("agents must come from defineAgent()", { key: "agents" });
    const listed = versions.get(a.name) ?? [];
    if (listed.some((v) => v.version === a.version)) {
      throw new DefinitionError(`agents lists "${a.name}" version ${JSON.stringify(a.version)} twice (give each definition of one name its own version)`, { key: "agents" });
    }
    listed.push(a);
    versions.set(a.name, listed);
    if (!agents.has(a.name)) agents.set(a.name, a);
  }
  // The agents that agent tools delegate to are served too (agents/agent-tool.ts).
  for (const a of withDelegates(agents.values())) {
    if (!agents.has(a.name)) versions.set(a.name, [a]);
    agents.set(a.name, agents.get(a.name) ?? a);
  }
  // Handoff targets are not added: each must be registered here itself (agents/handoff.ts).
  checkHandoffTargets(agents);
  return { agents, versions };
}

/** The claim bounds, auth, rate limits, delayed tasks, what-if and stream bounds. */
function checkBounds(options: GatehouseOptions): void {
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
  checkConcurrencyOptions(options);
  const msa = options.maxSchedulesPerAgent;
  if (msa !== undefined && !(Number.isSafeInteger(msa) && msa >= 1 && msa <= 10_000)) {
    throw new DefinitionError(`createGatehouse(): maxSchedulesPerAgent must be an integer from 1 to 10000, got ${msa}`, {
      key: "maxSchedulesPerAgent",
    });
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
}

/** The JSON limits, checked. */
function jsonLimitsOption(options: GatehouseOptions): JsonLimits {
  try {
    return jsonLimits(options.jsonLimits);
  } catch (err) {
    throw new DefinitionError(`createGatehouse(): jsonLimits.${(err as Error).message}`);
  }
}

/** The store deadline of request handlers, checked: a positive integer of ms. */
function storeTimeoutOption(options: GatehouseOptions): number {
  const storeTimeoutMs = options.storeTimeoutMs ?? DEFAULTS.storeTimeoutMs;
  if (!Number.isSafeInteger(storeTimeoutMs) || storeTimeoutMs < 1) {
    throw new DefinitionError("createGatehouse(): storeTimeoutMs must be a positive integer");
  }
  return storeTimeoutMs;
}

/**
 * Every check of createGatehouse()'s options, in order (the first error is
 * the one thrown): the options object, known keys and `concurrency`, the
 * agents, delegation, the bounds, retention and memory, JSON limits, the
 * guardians and their assignments, the store deadline, the `Prefer: wait`
 * cap. `allowNoAgents`: serve stored agents without definitions (serveReplay).
 */
export function checkGatehouseOptions(options: GatehouseOptions, allowNoAgents = false): CheckedOptions {
  if (!options || typeof options !== "object") throw new DefinitionError("createGatehouse() needs an options object");
  checkOptions(options);
  const { agents, versions } = checkAgents(options, allowNoAgents);
  checkDelegationSettings(options.delegation);
  checkBounds(options);
  const retention = retentionOption(options, agents);
  const limits = jsonLimitsOption(options);
  const guardians = createGuardianRegistry({ agents: agents.values(), guardians: options.guardians, assignments: options.assignments });
  return {
    agents, versions, guardians, retention,
    jsonLimits: limits,
    storeTimeoutMs: storeTimeoutOption(options),
    maxWaitSeconds: maxWaitSeconds(options.maxWaitSeconds),
  };
}

/**
 * `concurrencyLimits` (common/concurrency.ts; refused also when the store cannot keep them, store/port.ts
 * `keepsConcurrencyLimits`) and `metricsLanes`, each refused naming the field.
 */
function checkConcurrencyOptions(options: GatehouseOptions): void {
  const p = concurrencyLimitsProblem(options.concurrencyLimits);
  if (p) {
    throw new DefinitionError(`createGatehouse(): concurrencyLimits ${p.message}`, {
      key: p.key !== undefined ? `concurrencyLimits.${p.key}` : "concurrencyLimits",
    });
  }
  if (options.store?.keepsConcurrencyLimits === false && Object.keys(options.concurrencyLimits ?? {}).length > 0) {
    throw new DefinitionError(
      "createGatehouse(): concurrencyLimits cannot be kept by this store (its keepsConcurrencyLimits is false); " +
        "the memory store, Redis (one server, Sentinel or Cluster) and Upstash keep them (docs/limits.md)",
      { key: "concurrencyLimits" },
    );
  }
  const n = options.metricsLanes;
  if (n !== undefined && !(Number.isSafeInteger(n) && n >= 0 && n <= MAX_METRICS_LANES)) {
    throw new DefinitionError(`createGatehouse(): metricsLanes must be a whole number from 0 to ${MAX_METRICS_LANES}, got ${JSON.stringify(n)}`, {
      key: "metricsLanes",
    });
  }
}
