/**
 * createWorkersHandler(): the Cloudflare Workers entry. A Worker has no
 * process that lives on: work runs inside invocations, each limited in wall
 * time and subrequests, so the handler drives agents in bounded pieces.
 * The design, its limits and their numbers are in docs/runtimes.md.
 *
 * Invariants:
 * - Nothing runs at module scope: the gatehouse, its store and its worker id
 *   are built on the first invocation (workerd refuses randomness and I/O
 *   outside a handler), once per `env` object, so resident actors and the
 *   script cache survive across invocations of one isolate. The resident
 *   cache is keyed by snapshot version, so an actor another isolate has moved
 *   on is a miss, never stale state.
 * - `fetch`: a request that rings a bell (task, tool result, cancel, watchdog
 *   tick) gets its response first; the woken agent is then driven in
 *   `ctx.waitUntil` within `driveBudget` (steps and wall time). At its end the
 *   agent is handed back in the commit that ends the step (lease released,
 *   due at once); nothing is left under a lease except while a step runs.
 *   Each drive ends by writing the tool registry's batched call counts
 *   (actors/registry/writer.ts, no timer on Workers): one store call per
 *   (role, method) called again since its first write, none when nothing
 *   is pending.
 * - `scheduled` (a cron trigger): one watchdog pass, then due agents of every
 *   target are claimed and driven within `scheduledDriveBudget`; due recurring
 *   schedules (routes/schedules.ts) are fired on the way, each tick one
 *   store step, and the task a tick enqueues is driven like any due agent.
 *   Every such drive starts with a tick firer pass (actors/pool/tick-firer.ts:
 *   every due tick fired, the enqueue only, before any turn runs), up since
 *   the drive began: no process is up between invocations, so `catchUp`
 *   decides the ticks due before it. So a schedule ticks at most as often as
 *   the cron trigger runs (the trigger's period bounds its lateness). A turn longer
 *   than one invocation therefore finishes across invocations; nothing
 *   depends on an isolate living on.
 * - Optional continuation bell: when a drive stops on its drive budget with work
 *   left, `continuation(env)` gives a request to send (for example a QStash
 *   publish whose destination is this Worker's `POST /v1/watchdog/tick`), so
 *   the next piece starts without waiting for the cron.
 *
 * @example
 * import { createWorkersHandler, upstashStore } from "@gatehouse-runtime/core";
 * export default createWorkersHandler({
 *   agents: [helper],
 *   store: (env) => upstashStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }),
 * });
 */
import { checkDriveBudget, type DriveBudget } from "./actors/claim/drive-budget.ts";
import { createDriver, type Driver } from "./actors/pool/drive.ts";
import { DefinitionError } from "./errors/errors.ts";
import { type BuiltGatehouse, buildGatehouse, type GatehouseOptions } from "./gatehouse.ts";
import { ProblemError } from "./routes/problem.ts";
import type { RouteAuth } from "./routes/runtime.ts";
import { silentLogger } from "./actors/runtime.ts";
import { isSingleConsumerTarget } from "./actors/pool/target-lease.ts";
import type { Store } from "./store/port.ts";
import { processLive } from "./store/live.ts";
import { originalRequest } from "./routes/request-origin.ts";
import { DEFAULTS } from "./common/defaults.ts";
import { refuseRenamed, RENAMED_WORKERS_KEYS } from "./common/renamed.ts";

/** The part of a Workers `ExecutionContext` the handler uses. */
export interface WorkersExecutionContext {
  waitUntil(promise: Promise<unknown>): void;
}

/** The part of a Workers `ScheduledController` (cron trigger) the handler uses. */
export interface WorkersScheduledController {
  readonly scheduledTime: number;
  readonly cron: string;
}

/** Bindings of the Worker: whatever the store factory reads. */
// deno-lint-ignore no-explicit-any
export type WorkersEnv = any;

export interface WorkersHandlerOptions<E = WorkersEnv>
  extends Omit<GatehouseOptions, "store" | "auth" | "inline" | "concurrency" | "pollMs" | "idlePollMaxMs" | "watchdogIntervalMs" | "watchdogIdleMaxMs"> {
  /** Builds the store from the Worker's bindings; called once per isolate (per `env` object). */
  store: (env: E) => Store | Promise<Store>;
  /**
   * Auth (scoped tokens, signed requests; e.g. `authFromEnv`) of every route but `/healthz`, fixed or read from the
   * bindings (secrets reach a Worker only through `env`); undefined: off.
   */
  auth?: RouteAuth | ((env: E) => RouteAuth | undefined);
  /** What a request that rings a bell may spend driving agents in `ctx.waitUntil` (default 10 steps, 20 000 ms). */
  driveBudget?: Partial<DriveBudget>;
  /** What one `scheduled` invocation may spend driving agents after its watchdog pass (default 15 steps, 20 000 ms). */
  scheduledDriveBudget?: Partial<DriveBudget>;
  /**
   * The continuation bell: a request to send when a drive stopped on its
   * drive budget with work left (null/undefined: none). Sent in `ctx.waitUntil`;
   * a failed send is logged, the cron still picks the work up.
   */
  continuation?: (env: E) => Request | null | undefined;
}

export interface WorkersHandler<E = WorkersEnv> {
  fetch(request: Request, env: E, ctx: WorkersExecutionContext): Promise<Response>;
  scheduled(controller: WorkersScheduledController, env: E, ctx: WorkersExecutionContext): Promise<void>;
}

/**
 * Limits of one drive on Workers: steps and wall time one invocation may
 * spend driving agents (actors/claim/drive-budget.ts). Not a spend limit (`spendLimit`).
 */
export type { DriveBudget };

/** Default drive budgets (DEFAULTS.driveBudget, DEFAULTS.scheduledDriveBudget in common/defaults.ts). */
export const DEFAULT_FETCH_BUDGET: DriveBudget = DEFAULTS.driveBudget;
export const DEFAULT_SCHEDULED_BUDGET: DriveBudget = DEFAULTS.scheduledDriveBudget;
/** Tool calls one watchdog pass on Workers times out at most (one store call each; the rest wait for the next pass). */
export const WORKERS_WATCHDOG_LIMIT = 10;
/** SSE on Workers: one store read a second, at most 40 per stream request (1 + 40 subrequests). */
export const WORKERS_SSE = { pollMs: 1_000, maxReads: 40, retryMs: 1_000 } as const;

/** What rang during one request: the agents to drive, or any due agent (after a watchdog tick). */
interface Bells {
  agents: Set<string>;
  any: boolean;
}

interface Instance {
  built: BuiltGatehouse;
  /** Drives claims in bounded pieces, the worker pool's way (actors/pool/drive.ts). */
  driver: Driver;
}

/** The handler's options, checked at module scope. */
interface WorkersConfig<E> {
  makeStore: (env: E) => Store | Promise<Store>;
  auth: WorkersHandlerOptions<E>["auth"];
  /** The options createGatehouse takes, as given. */
  rest: Omit<GatehouseOptions, "store" | "auth">;
  fetchBudget: DriveBudget;
  cronBudget: DriveBudget;
  continuation: WorkersHandlerOptions<E>["continuation"];
}

/** The gatehouse options of a Worker, `given` laid over: SSE within its subrequests, no `Prefer: wait`. */
function gatehouseOptions<E>(cfg: WorkersConfig<E>, given: Pick<GatehouseOptions, "store" | "auth">): GatehouseOptions {
  const { rest } = cfg;
  return { ...rest, ...given, sse: { ...WORKERS_SSE, ...rest.sse }, maxWaitSeconds: 0 };
}

/**
 * Checks the options at module scope, without building a store: agents, a
 * fixed auth and the rest as createGatehouse does, the drive budgets, and
 * no agent on a single-consumer target. A bad definition fails the
 * deployment, not the first request.
 */
function checkWorkersOptions<E>(options: WorkersHandlerOptions<E>): WorkersConfig<E> {
  if (!options || typeof options.store !== "function") {
    throw new DefinitionError("createWorkersHandler() needs `store: (env) => Store` (for example upstashStore)");
  }
  if ((options as { inline?: unknown }).inline !== undefined) {
    throw new DefinitionError("createWorkersHandler() drives work in ctx.waitUntil itself; remove the `inline` option");
  }
  refuseRenamed(options, RENAMED_WORKERS_KEYS, "createWorkersHandler()");
  const fetchBudget = checkDriveBudget("driveBudget", options.driveBudget, DEFAULT_FETCH_BUDGET);
  const cronBudget = checkDriveBudget("scheduledDriveBudget", options.scheduledDriveBudget, DEFAULT_SCHEDULED_BUDGET);
  const {
    store: makeStore,
    auth,
    driveBudget: _d,
    scheduledDriveBudget: _sd,
    continuation,
    ...rest
  } = options;
  const cfg: WorkersConfig<E> = { makeStore, auth, rest, fetchBudget, cronBudget, continuation };
  buildGatehouse(gatehouseOptions(cfg, typeof auth === "object" ? { auth } : {}));
  // A Worker has no process that could hold a single-consumer target's lease (actors/pool/target-lease.ts).
  const single = (rest.agents ?? []).find((a) => a && isSingleConsumerTarget(a.workerTarget));
  if (single) {
    throw new DefinitionError(
      `createWorkersHandler(): agent "${single.name}" is on the single-consumer target "${single.workerTarget}"; ` +
        "svc1_ targets are consumed by one long-running process (serveNode, serveDeno, serveBun), not by Workers",
      { key: "agents" },
    );
  }
  return cfg;
}

/** The gatehouse of one `env` object, its wakes recorded as the bells of the request that rang them. */
async function buildInstance<E>(cfg: WorkersConfig<E>, env: E, bells: WeakMap<Request, Bells>): Promise<Instance> {
  const store = await cfg.makeStore(env);
  const auth = typeof cfg.auth === "function" ? cfg.auth(env) : cfg.auth;
  const built = buildGatehouse(gatehouseOptions(cfg, { store, ...(auth ? { auth } : {}) }), {
    wake(agentId, request) {
      // A route may have replaced the request (routes/request-origin.ts): the bells are the incoming one's.
      const b = request && bells.get(originalRequest(request));
      if (!b) return; // rung outside a request of this handler: the cron picks it up
      if (agentId === undefined) b.any = true;
      else b.agents.add(agentId);
    },
    watchdogLimit: WORKERS_WATCHDOG_LIMIT,
    // No timer outlives an invocation: each drive writes the registry's batched counts as it ends.
    registryFlushMs: null,
    // Deltas stay in the isolate (readers of this invocation get them): no subrequest per message.
    live: processLive(),
  });
  const driver = createDriver(built.deps, { targets: built.targets, workerId: () => built.ids.workerId(), turnId: () => built.ids.turnId() });
  return { built, driver };
}

/** Sends the continuation bell, if any; a failed send is logged (the cron still picks the work up). */
async function ringContinuation<E>(cfg: WorkersConfig<E>, env: E, inst: Instance): Promise<void> {
  const req = cfg.continuation?.(env);
  if (!req) return;
  try {
    const res = await fetch(req);
    if (!res.ok) inst.built.deps.logger.warn("continuation bell refused", { status: res.status, url: req.url });
    await res.body?.cancel();
  } catch (err) {
    inst.built.deps.logger.warn("continuation bell failed", { error: String(err), url: req.url });
  }
}

/**
 * @example
 * export default createWorkersHandler({
 *   agents: [helper],
 *   store: (env) => upstashStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }),
 *   driveBudget: { steps: 10, ms: 20_000 },
 * });
 */
export function createWorkersHandler<E = WorkersEnv>(options: WorkersHandlerOptions<E>): WorkersHandler<E> {
  const cfg = checkWorkersOptions(options);
  /** The bells each in-flight request rang, keyed by its Request (what the routes see as `c.req.raw`). */
  const bells = new WeakMap<Request, Bells>();
  const instances = new WeakMap<object, Promise<Instance>>();

  function instance(env: E): Promise<Instance> {
    const key = (env ?? instances) as object;
    let p = instances.get(key);
    if (!p) {
      p = buildInstance(cfg, env, bells);
      // A failed build (a store factory that threw) is retried by the next invocation.
      p.catch(() => instances.delete(key));
      instances.set(key, p);
    }
    return p;
  }

  /** One drive (actors/pool/drive.ts), then the continuation when it stopped on its budget with work left. */
  async function drive(inst: Instance, env: E, b: Bells, limit: DriveBudget): Promise<void> {
    if (await inst.driver.drive(b, limit)) await ringContinuation(cfg, env, inst);
  }

  return {
    async fetch(request, env, ctx) {
      let inst: Instance;
      try {
        inst = await instance(env);
      } catch (err) {
        // The store factory failed (a missing binding, say): a problem response, no stack; the next request retries.
        (cfg.rest.logger ?? silentLogger).error("cannot build the gatehouse for this Worker", { error: String(err) });
        return new ProblemError("internal_error", "An internal error occurred").toResponse();
      }
      const b: Bells = { agents: new Set(), any: false };
      bells.set(request, b);
      try {
        const res = await inst.built.gatehouse.app.fetch(request, env as never, ctx as never);
        if (b.any || b.agents.size > 0) {
          const work = drive(inst, env, b, cfg.fetchBudget);
          // Without an execution context (called outside a Worker) the drive still runs, unguarded.
          if (typeof ctx?.waitUntil === "function") ctx.waitUntil(work);
        }
        return res;
      } finally {
        bells.delete(request);
      }
    },
    async scheduled(_controller, env, ctx) {
      const inst = await instance(env);
      const run = (async () => {
        try {
          await inst.built.gatehouse.tick();
        } catch (err) {
          inst.built.deps.logger.error("watchdog tick failed", { error: String(err) });
        }
        await drive(inst, env, { agents: new Set(), any: true }, cfg.cronBudget);
      })();
      if (typeof ctx?.waitUntil === "function") ctx.waitUntil(run);
      await run;
    },
  };
}
