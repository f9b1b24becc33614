/**
 * The Hono app: composition of the route modules, auth, the agent id guard,
 * and the one place errors become responses.
 *
 * Order per request: auth (when configured: scoped bearer tokens or signed
 * requests, routes/auth.ts) -> rate limits (routes/rate-limit.ts; inside
 * auth when it is on) -> agent id check on
 * `/v1/agents/:agentId/*` -> the route (body, schema, store). Every error is
 * `application/problem+json` (routes/problem.ts); an unexpected one is logged
 * and answered as 500 `internal_error` without its message or stack.
 * Unknown paths answer 404 `not_found`; a known path with another method 405
 * `method_not_allowed` with an `Allow` header.
 */
import { HTTPException } from "hono/http-exception";
import { SnapshotError } from "../errors/errors.ts";
import { StoreUnavailableError } from "../store/outage.ts";
import { AGENT_ID_PATHS, agentIdGuard } from "./agent-id.ts";
import { agentListRoutes } from "./agent-list.ts";
import { agentRoutes } from "./agents.ts";
import type { GatehouseApp } from "./app-type.gen.ts";
import { authMiddleware, isOpenPath } from "./auth.ts";
import { requirementOf } from "./auth/access.ts";
import { debugPageRoutes } from "./debug/page.ts";
import { routeApp } from "./define.ts";
import { rateLimiter } from "./rate-limit.ts";
import { eventRoutes } from "./events.ts";
import { forkRoutes } from "./fork.ts";
import { healthRoutes } from "./health.ts";
import { historyRoutes } from "./history.ts";
import { machineRoutes } from "./machine.ts";
import { metricsRoutes } from "./metrics.ts";
import { versionRoutes } from "./versions.ts";
import { openApiDocument, openApiRoute } from "./openapi.ts";
import { type ProblemCode, ProblemError, PROBLEMS, storeUnavailable } from "./problem.ts";
import { exportRoutes } from "./replay-bundle.ts";
import { resetRoutes } from "./reset.ts";
import { streamSessionRoutes } from "./stream-session.ts";
import type { RouteRuntime } from "./runtime.ts";
import { agentDeleteRoutes } from "./agent-delete.ts";
import { scheduleRoutes } from "./schedules.ts";
import { toolResultRoutes } from "./tool-results.ts";
import { namedEventRoutes } from "./named-events.ts";
import { approvalRoutes } from "./approvals.ts";
import { agUiRoutes } from "./chat/ag-ui.ts";
import { chatRoutes } from "./chat/routes.ts";
import { toolRoutes } from "./tools.ts";
import { verdictRoutes } from "./verdicts.ts";
import { watchdogRoutes } from "./watchdog.ts";
import { whatIfRoutes } from "./what-if.ts";

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
 * The app, typed as `GatehouseApp` (routes/app-type.gen.ts, the type
 * `buildApp` infers, written out), so `hc<GatehouseApp>(url)` is a typed
 * client of it.
 *
 * @example
 * const app = createApp(runtime);
 * const res = await app.request("/healthz"); // 200 { ok: true, store: "memory" }
 */
export function createApp(rt: RouteRuntime): GatehouseApp {
  return buildApp(rt);
}

/**
 * The app with its inferred type: the route modules, chained (each one a
 * route app of routes/define.ts), then `GET /openapi.json`. A route module
 * added later joins the chain here; `npm run app-type` then rewrites
 * routes/app-type.gen.ts.
 */
export function buildApp(rt: RouteRuntime) {
  const app = routeApp(rt);

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

  // Rate limits run inside auth (after it let the request in); without auth, on their own.
  const rate = rateLimiter(rt.rateLimits, rt);
  const auth = authMiddleware(rt.auth, rt, rate);
  if (auth) app.use("*", auth);
  else if (rate) {
    app.use("*", async (c, next) => {
      if (!isOpenPath(c.req.path)) await rate(null, requirementOf(c.req.method, c.req.path).agentId, c);
      return next();
    });
  }
  for (const p of AGENT_ID_PATHS) app.use(p, agentIdGuard);

  let doc: Record<string, unknown> | undefined;
  const typed = app
    .route("/", healthRoutes(rt))
    .route("/", agentRoutes(rt))
    .route("/", toolResultRoutes(rt))
    .route("/", namedEventRoutes(rt))
    .route("/", approvalRoutes(rt))
    .route("/", eventRoutes(rt))
    .route("/", machineRoutes(rt))
    .route("/", watchdogRoutes(rt))
    .route("/", verdictRoutes(rt))
    .route("/", resetRoutes(rt))
    .route("/", agentDeleteRoutes(rt))
    .route("/", scheduleRoutes(rt))
    .route("/", metricsRoutes(rt))
    .route("/", versionRoutes(rt))
    .route("/", agentListRoutes(rt))
    .route("/", historyRoutes(rt))
    .route("/", forkRoutes(rt))
    .route("/", debugPageRoutes(rt))
    .route("/", whatIfRoutes(rt))
    .route("/", exportRoutes(rt))
    .route("/", streamSessionRoutes(rt))
    .route("/", toolRoutes(rt))
    .route("/", chatRoutes(rt))
    .route("/", agUiRoutes(rt))
    .openapi(openApiRoute, (c) => c.json(doc ??= openApiDocument(app, rt), 200));

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

  return typed;
}
