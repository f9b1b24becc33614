/**
 * The Hono app: composition of the route modules, auth, the agent id guard,
 * and the one place errors become responses.
 *
 * Order per request: auth (when configured: scoped bearer tokens or signed
 * requests, routes/auth.ts) -> agent id check on
 * `/v1/agents/:agentId/*` -> the route (body, schema, store). Every error is
 * `application/problem+json` (routes/problem.ts); an unexpected one is logged
 * and answered as 500 `internal_error` without its message or stack.
 * Unknown paths answer 404 `not_found`; a known path with another method 405
 * `method_not_allowed` with an `Allow` header.
 */
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { SnapshotError } from "../errors/errors.ts";
import { StoreUnavailableError } from "../store/outage.ts";
import { agentIdGuard, AGENT_ID_PATHS } from "./agent-id.ts";
import { agentListRoutes } from "./agent-list.ts";
import { agentRoutes } from "./agents.ts";
import { debugPageRoutes } from "./debug/page.ts";
import { forkRoutes } from "./fork.ts";
import { historyRoutes } from "./history.ts";
import { whatIfRoutes } from "./what-if.ts";
import { exportRoutes } from "./replay-bundle.ts";
import { authMiddleware } from "./auth.ts";
import { eventRoutes } from "./events.ts";
import { healthRoutes } from "./health.ts";
import { machineRoutes } from "./machine.ts";
import { metricsRoutes } from "./metrics.ts";
import type { RouteModuleFactory } from "./module.ts";
import { openApiRoutes } from "./openapi.ts";
import { type ProblemCode, ProblemError, PROBLEMS, storeUnavailable } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { resetRoutes } from "./reset.ts";
import { agentDeleteRoutes } from "./agent-delete.ts";
import { toolResultRoutes } from "./tool-results.ts";
import { verdictRoutes } from "./verdicts.ts";
import { watchdogRoutes } from "./watchdog.ts";

/**
 * The route modules, mounted in this order. New route sets (e.g. verdicts)
 * join this list; `GET /openapi.json` documents every module listed here.
 */
export const ROUTE_MODULES: readonly RouteModuleFactory[] = [
  healthRoutes,
  agentRoutes,
  toolResultRoutes,
  eventRoutes,
  machineRoutes,
  watchdogRoutes,
  verdictRoutes,
  resetRoutes,
  agentDeleteRoutes,
  metricsRoutes,
  agentListRoutes,
  historyRoutes,
  forkRoutes,
  debugPageRoutes,
  whatIfRoutes,
  exportRoutes,
];

/** Regex of a Hono path pattern (`:param` matches one segment). */
function pathRegex(pattern: string): RegExp {
  const body = pattern.split(/(:[A-Za-z0-9_]+)/).map((part) =>
    part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  ).join("");
  return new RegExp(`^${body}$`);
}

function fromHttpException(err: HTTPException): ProblemError {
  const code = (Object.keys(PROBLEMS) as ProblemCode[]).find((k) => PROBLEMS[k].status === err.status);
  return new ProblemError(code ?? "internal_error", code ? PROBLEMS[code].title : "An internal error occurred");
}

/**
 * @example
 * const app = createApp(runtime);
 * const res = await app.request("/healthz"); // 200 { ok: true, store: "memory" }
 */
export function createApp(rt: RouteRuntime, extraModules: readonly RouteModuleFactory[] = []): Hono {
  const app = new Hono();

  app.onError((err, c) => {
    if (err instanceof ProblemError) return err.toResponse();
    if (err instanceof SnapshotError) return new ProblemError("snapshot_unrestorable", err.message).toResponse();
    if (err instanceof StoreUnavailableError) {
      rt.logger.warn("store unavailable", { method: c.req.method, path: c.req.path, error: err.message });
      return storeUnavailable(err.message).toResponse();
    }
    if (err instanceof HTTPException && err.status < 500) return fromHttpException(err).toResponse();
    if (c.req.raw.signal?.aborted) {
      // The client disconnected; whatever failed afterwards is no server error.
      rt.logger.info("client disconnected", { method: c.req.method, path: c.req.path, error: String(err) });
      return new ProblemError("internal_error", "The client disconnected").toResponse();
    }
    rt.logger.error("request failed", { method: c.req.method, path: c.req.path, error: String(err) });
    return new ProblemError("internal_error", "An internal error occurred").toResponse();
  });

  const auth = authMiddleware(rt.auth, rt);
  if (auth) app.use("*", auth);
  for (const p of AGENT_ID_PATHS) app.use(p, agentIdGuard);

  const modules = [...ROUTE_MODULES, ...extraModules].map((factory) => factory(rt));
  modules.push(openApiRoutes(rt, modules));
  for (const m of modules) app.route("/", m.app);

  const routes = app.routes.filter((r) => r.method !== "ALL").map((r) => ({ method: r.method, re: pathRegex(r.path) }));
  app.notFound((c) => {
    const path = c.req.path.length > 200 ? `${c.req.path.slice(0, 200)}…` : c.req.path;
    const allowed = [...new Set(routes.filter((r) => r.re.test(c.req.path)).map((r) => r.method))];
    if (allowed.length > 0) {
      if (allowed.includes("GET")) allowed.push("HEAD");
      return new ProblemError("method_not_allowed", `${c.req.method} is not allowed on ${path}`, {
        headers: { allow: allowed.join(", ") },
        extra: { allow: allowed },
      }).toResponse();
    }
    return new ProblemError("not_found", `No route for ${c.req.method} ${path}`).toResponse();
  });

  return app;
}
