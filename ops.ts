/**
 * `@gatehouse-runtime/core/ops`: what an operator wires or tunes beyond an
 * agent author's `createGatehouse`. The Hono app over a runtime of one's own
 * (`createApp`, its `RouteRuntime`), the problem codes of the HTTP surface
 * (`PROBLEMS`, `problemType`, `ProblemError`), auth configuration
 * (`authFromEnv`, `checkAuthConfig`), and the defaults: `DEFAULTS` (every
 * default number, common/defaults.ts), `DEFAULT_RETENTION`, the Workers
 * drive budgets and stream settings.
 *
 * Web APIs only, like the root module. The root module exported these
 * names up to 0.1; now only this subpath does (CHANGELOG.md).
 * @module
 */
export { createApp } from "./routes/app.ts";
export type { GatehouseApp, GatehouseSchema } from "./routes/app-type.gen.ts";
export { PROBLEMS, ProblemError, problemType } from "./routes/problem.ts";
export type { ProblemCode } from "./routes/problem.ts";
export type { RouteAuth, RouteLimits, RouteRuntime } from "./routes/runtime.ts";
export type { AuthVerb, QstashKeys, ScopedToken } from "./routes/auth/config.ts";
export { authFromEnv } from "./routes/auth/from-env.ts";
export { checkAuthConfig } from "./routes/auth/config.ts";
export { DEFAULTS } from "./common/defaults.ts";
export { DEFAULT_RETENTION } from "./store/retention.ts";
export { DEFAULT_FETCH_BUDGET, DEFAULT_SCHEDULED_BUDGET, WORKERS_SSE } from "./workers.ts";

// The live channel (store/live.ts), for a store adapter of your own: `Store.live` carries model deltas and
// "log grew" notices between processes; this is the in-process one the memory store uses.
export { processLive as createProcessLive } from "./store/live.ts";
export type { LiveChannel, LiveDelta, LiveGrew, LiveListener, LiveMessage } from "./store/live.ts";
