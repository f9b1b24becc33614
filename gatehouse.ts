/**
 * createGatehouse(): wires agents, a store, the worker pool, the watchdog and
 * the Hono app. Reads no environment: runtime entry files (entry/) do that.
 */
import type { Hono } from "hono";
import type { InspectionEvent } from "xstate";
import type { AnyAgent } from "./agents/define.ts";
import { DefinitionError } from "./errors/errors.ts";
import { lruCache } from "./actors/cache.ts";
import type { HostDeps } from "./actors/host.ts";
import { type Clock, type IdSource, type Logger, randomIds, silentLogger, systemClock } from "./actors/runtime.ts";
import { watchdogTick, type WatchdogTickResult } from "./actors/watchdog.ts";
import { createWorkerPool } from "./actors/worker.ts";
import { createApp } from "./routes/app.ts";
import { DEFAULT_EVENT_PAGE_BYTES } from "./routes/events.ts";
import { checkAuthConfig } from "./routes/auth.ts";
import type { RouteAuth, RouteRuntime } from "./routes/runtime.ts";
import { memoryStore } from "./store/memory.ts";
import type { Store } from "./store/port.ts";
import type { VerificationHooks } from "./verification/gate.ts";
import { verdictRecorder } from "./verification/recorder.ts";
import type { Guardian } from "./verdicts/guardian.ts";
import { createVerdictLog, type VerdictLog } from "./verdicts/log.ts";
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
  /** Concurrent worker loops per process (default 4). */
  concurrency?: number;
  /** Lease of one claim in ms (default 30 000); renewed while the claim runs. */
  leaseMs?: number;
  /** Longest idle poll interval of a worker loop in ms (default 100). */
  pollMs?: number;
  /** Watchdog interval of `startWorker()` in ms (default 1 000). */
  watchdogIntervalMs?: number;
  /** Largest request body in bytes (default 256 KiB). */
  maxBodyBytes?: number;
  /** Default resume deadline of external tool calls in ms (default 10 min). */
  externalToolTimeoutMs?: number;
  /** Default timeout of in-process tools in ms (default 60 s). */
  toolTimeoutMs?: number;
  /** Base backoff after a verifier system error in ms (default 1 000, doubled per error). */
  verifierBackoffMs?: number;
  /** XState inspection callback for every actor this process runs. */
  inspect?: (event: InspectionEvent) => void;
  /** Process work inline after each accepted request (serverless without a worker). */
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
  /** Bearer-token auth of every route but `/healthz` (off by default). */
  auth?: RouteAuth;
  /**
   * Event streams: store poll interval (default 250 ms), idle keep-alive
   * interval (default 15 000 ms), and caps on open streams per agent
   * (default 8) and per process (default 1 000), 429 beyond them.
   */
  sse?: { pollMs?: number; keepAliveMs?: number; maxStreamsPerAgent?: number; maxStreams?: number };
  /** Byte budget of one events page (default 1 MiB; a page always holds at least one event). */
  maxEventPageBytes?: number;
}

export interface Gatehouse {
  app: Hono;
  fetch: (req: Request) => Promise<Response>;
  store: Store;
  agents: ReadonlyMap<string, AnyAgent>;
  /** Guardians and their assignments (output verifiers included). */
  guardians: GuardianRegistry;
  /** Verdict records: write-once, read upgraded. */
  verdicts: VerdictLog;
  /** Starts the background worker loops and the watchdog loop. */
  startWorker(): void;
  stopWorker(): Promise<void>;
  /** Processes all claimable work until nothing is left; resolves with the number of claims run. */
  drain(): Promise<number>;
  /** One watchdog pass (what `POST /v1/watchdog/tick` runs). */
  tick(): Promise<WatchdogTickResult>;
  close(): Promise<void>;
}

/**
 * @example
 * const gh = createGatehouse({ agents: [support] });
 * const res = await gh.fetch(new Request("http://x/v1/agents/a1/tasks", {
 *   method: "POST", headers: { "content-type": "application/json" },
 *   body: JSON.stringify({ agent: "support", input: "hello" }),
 * }));
 * await gh.drain();
 */
export function createGatehouse(options: GatehouseOptions): Gatehouse {
  if (!options || !Array.isArray(options.agents) || options.agents.length === 0) {
    throw new DefinitionError("createGatehouse() needs at least one agent in `agents`");
  }
  const agents = new Map<string, AnyAgent>();
  for (const a of options.agents) {
    if (!a || a.kind !== "agent") throw new DefinitionError("agents must come from defineAgent()");
    if (agents.has(a.name)) throw new DefinitionError(`Two agents are named "${a.name}"`);
    agents.set(a.name, a);
  }
  if (options.auth !== undefined) {
    const e = checkAuthConfig(options.auth);
    if (e) throw new DefinitionError(`createGatehouse(): ${e}`);
  }
  const store = options.store ?? memoryStore();
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
  const deps: HostDeps = {
    store, agents, clock, logger,
    cache: lruCache(),
    leaseMs: options.leaseMs ?? 30_000,
    inspect: options.inspect,
    verification,
    externalToolTimeoutMs: options.externalToolTimeoutMs ?? 600_000,
    toolTimeoutMs: options.toolTimeoutMs ?? 60_000,
    verifierBackoffMs: options.verifierBackoffMs ?? 1_000,
  };
  const pool = createWorkerPool(deps, {
    targets,
    concurrency: options.concurrency ?? 4,
    pollMs: options.pollMs ?? 100,
    workerId: ids.workerId(),
  });
  let watchdogTimer: ReturnType<typeof setInterval> | undefined;
  const tick = () => watchdogTick(store, clock, 100, { logger });

  const runtime: RouteRuntime = {
    store, agents, clock, ids, logger,
    limits: {
      maxBodyBytes: options.maxBodyBytes ?? 256 * 1024,
      maxEventPage: 500,
      maxEventPageBytes: options.maxEventPageBytes ?? DEFAULT_EVENT_PAGE_BYTES,
    },
    wake() {
      if (pool.running) pool.nudge();
      else if (options.inline) {
        pool.drain().catch((err) => logger.error("inline drain failed", { error: String(err) }));
      }
    },
    async watchdogTick() {
      const r = await tick();
      runtime.wake();
      return r;
    },
    ssePollMs: options.sse?.pollMs ?? 250,
    sseKeepAliveMs: options.sse?.keepAliveMs ?? 15_000,
    sseLimits: {
      ...(options.sse?.maxStreamsPerAgent !== undefined ? { maxStreamsPerAgent: options.sse.maxStreamsPerAgent } : {}),
      ...(options.sse?.maxStreams !== undefined ? { maxStreams: options.sse.maxStreams } : {}),
    },
    ...(options.auth ? { auth: { bearerTokens: [...options.auth.bearerTokens] } } : {}),
  };
  const app = createApp(runtime);

  return {
    app,
    fetch: (req: Request) => Promise.resolve(app.fetch(req)),
    store,
    agents,
    guardians,
    verdicts,
    startWorker() {
      pool.start();
      if (!watchdogTimer) {
        watchdogTimer = setInterval(() => {
          tick().then((r) => r.timedOut > 0 && pool.nudge()).catch((err) =>
            logger.warn("watchdog tick failed", { error: String(err) })
          );
        }, options.watchdogIntervalMs ?? 1_000);
      }
    },
    async stopWorker() {
      if (watchdogTimer) clearInterval(watchdogTimer);
      watchdogTimer = undefined;
      await pool.stop();
    },
    drain: () => pool.drain(),
    tick,
    async close() {
      if (watchdogTimer) clearInterval(watchdogTimer);
      watchdogTimer = undefined;
      await pool.stop();
      await store.close();
    },
  };
}
