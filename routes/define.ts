/**
 * How a route module is written: `@hono/zod-openapi` routes, declared once.
 *
 * A route module exports a factory `(rt) => OpenAPIHono` that chains
 * `.openapi(defineRoute(config, problems, access), handler)` for each of its
 * routes. `config` is the library's `createRoute` config: request params,
 * query, headers and body schemas, and every success response with its
 * schema. `problems` lists the problem codes the route may answer; they
 * become its error responses in the document (one `Problem` schema, the
 * codes in `x-problem-codes`), beside the codes every route may answer.
 *
 * What the library does not give is plugged into its own extension points:
 * - a route with a JSON body gets `readBody` as route middleware: the body
 *   checks of routes/body.ts (size limit on the bytes actually read, 415,
 *   `malformed_json`, `json_limit_exceeded`) run before the library's
 *   validator, which then validates the parsed value;
 * - `problemHook`, the apps' `defaultHook`, turns every schema violation
 *   (params, query, headers, body) into 400 `validation_failed` with the
 *   zod issues in `errors`.
 *
 * The app's type (what `hc` reads) follows from the chained `.openapi`
 * calls: routes/app-type.gen.ts writes it out (scripts/app-type.ts).
 */
import { OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { z } from "zod";
import { type BodyLimits, readJson, validationProblem } from "./body.ts";
import { PROBLEM_CONTENT_TYPE, type ProblemCode, ProblemError, PROBLEMS } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { replaceRequest } from "./request-origin.ts";
import { declareAccess, type RouteAccess } from "./auth/access.ts";
import { Problem } from "./schemas.ts";

/** Problems of every route that reads a JSON body. */
export const BODY_PROBLEMS: ProblemCode[] = [
  "malformed_json",
  "json_limit_exceeded",
  "validation_failed",
  "payload_too_large",
  "unsupported_media_type",
];

const WHERE: Record<string, string> = { json: "body", param: "path", query: "query", header: "headers", cookie: "cookies" };

/** The `defaultHook` of every route app: a schema violation is 400 `validation_failed`. */
export function problemHook(result: { success: boolean; target: string; error?: z.ZodError }): undefined {
  if (!result.success && result.error) {
    throw validationProblem(result.error, WHERE[result.target] ?? result.target);
  }
  return undefined;
}

/**
 * Route middleware reading the JSON body with the checks of routes/body.ts.
 * The parsed value is handed to the library's validator through the
 * request's body cache (what `c.req.json()` answers); an optional body that
 * is absent or empty reads as `{}`.
 */
export function readBody(limits: BodyLimits, optional: boolean): MiddlewareHandler {
  return async (c, next) => {
    const value = await readJson(c, limits, { optional });
    if (value === undefined && (c.req.raw.body !== null || c.req.header("content-type") !== undefined)) {
      // An absent or empty optional body is `{}` whatever its media type (routes/body.ts). The library's media-type
      // gate would refuse a non-JSON type with 415, and it takes an empty body stream (workerd gives every POST one)
      // for a body once it was read: it sees the request as it is, without a body and without a body's type.
      const headers = new Headers(c.req.raw.headers);
      headers.delete("content-type");
      replaceRequest(c, new Request(c.req.raw.url, { method: c.req.raw.method, headers, signal: c.req.raw.signal }));
    }
    c.req.bodyCache.json = Promise.resolve(value === undefined ? {} : value);
    await next();
  };
}

/** A JSON response of `schema`. */
export function json<const D extends string, S extends z.ZodType>(
  description: D,
  schema: S,
): { description: D; content: { "application/json": { schema: S } } } {
  return { description, content: { "application/json": { schema } } };
}

/** A JSON request body of `schema` (`required: false`: absent or empty reads as `{}`). */
export function jsonBody<S extends z.ZodType, const Required extends boolean = true>(
  schema: S,
  opts: { required?: Required; description?: string } = {},
): { required: Required; description?: string; content: { "application/json": { schema: S } } } {
  return {
    required: (opts.required ?? true) as Required,
    ...(opts.description !== undefined ? { description: opts.description } : {}),
    content: { "application/json": { schema } },
  };
}

type ProblemResponse = {
  description: string;
  "x-problem-codes": ProblemCode[];
  headers?: Record<string, { schema: { type: "string" } }>;
  content: Record<string, { schema: z.ZodType }>;
};

/** Error responses of `codes`, grouped by status. */
export function problemResponses(codes: readonly ProblemCode[], problem: z.ZodType): Record<number, ProblemResponse> {
  const byStatus = new Map<number, ProblemCode[]>();
  for (const code of new Set(codes)) {
    const s = PROBLEMS[code].status;
    byStatus.set(s, [...(byStatus.get(s) ?? []), code]);
  }
  const out: Record<number, ProblemResponse> = {};
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[status] = {
      description: list.map((c) => `\`${c}\`: ${PROBLEMS[c].title}`).join("; "),
      "x-problem-codes": list,
      ...(status === 401 ? { headers: { "WWW-Authenticate": { schema: { type: "string" as const } } } } : {}),
      ...(status === 429 ? { headers: { "Retry-After": { schema: { type: "string" as const } } } } : {}),
      content: { [PROBLEM_CONTENT_TYPE]: { schema: problem } },
    };
  }
  return out;
}

/**
 * Who may call a route (routes/auth/access.ts): `"public"` routes never ask
 * for a token (routes/auth.ts); any other route names the verb a token needs
 * (`"read"`, `"enqueue"`, `"deliver"`, `"cancel"`, `"replay"`, `"admin"`),
 * with `global` and `signable` where they apply.
 */
export type Access = RouteAccess;

interface RouteDocs {
  problems: readonly ProblemCode[];
  access: Access;
}

/** What `defineRoute` noted about each route config, read when an app registers it. */
const docs = new WeakMap<object, RouteDocs>();

/**
 * A route: the library's route config (as for `createRoute`), the
 * problem codes it may answer besides its success responses, and who may
 * call it (`access`: the verb a token needs, or `"public"`; the auth table of
 * routes/auth/access.ts is made of these declarations). Returns
 * `config` with its exact type (what the handler and `hc` see). An app of
 * `routeApp(rt)` registering it adds the problem responses (plus
 * `unauthorized`/`forbidden` when auth is on and `internal_error` always),
 * the body reader as middleware when there is a JSON body, and
 * `security: []` on a public route.
 *
 * @example
 * const getAgent = defineRoute({
 *   method: "get",
 *   path: "/v1/agents/{agentId}",
 *   operationId: "getAgent",
 *   summary: "Read an agent",
 *   tags: ["agents"],
 *   request: { params: AgentParams },
 *   responses: { 200: json("The agent", AgentView) },
 * }, ["invalid_agent_id", "agent_not_found"], "read");
 */
export function defineRoute<const R extends RouteConfig>(config: R, problems: readonly ProblemCode[], access: Access): R {
  docs.set(config, { problems, access });
  declareAccess(config.method, config.path, access);
  return config;
}

/** What registering a route reads of the runtime. */
type RuntimeDocs = Pick<RouteRuntime, "auth" | "limits" | "rateLimits">;

/** `config` as registered on the app of `rt` (see `defineRoute`). */
export function withRuntime<R extends RouteConfig>(rt: RuntimeDocs, config: R): R {
  const d = docs.get(config);
  if (!d) throw new Error(`Cannot register route ${config.method.toUpperCase()} ${config.path}: it was not made by defineRoute`);
  const secured = d.access !== "public" && rt.auth !== undefined;
  // Rate limits (routes/rate-limit.ts) apply to every route that is not public, with or without auth.
  const limited = d.access !== "public" && rt.rateLimits != null;
  const codes: ProblemCode[] = [
    ...d.problems,
    ...(secured ? ["unauthorized" as const, "forbidden" as const] : []),
    ...(limited ? ["rate_limited" as const] : []),
    "internal_error",
  ];
  const body = config.request?.body;
  const middleware = body ? [readBody(rt.limits, body.required !== true)] : [];
  return {
    ...config,
    ...(d.access === "public" ? { security: [] } : {}),
    ...(middleware.length > 0 ? { middleware } : {}),
    responses: { ...config.responses, ...problemResponses(codes, Problem) },
  };
}

/**
 * A new route app for `rt`: `problemHook` is its default hook, and each
 * route it registers with `.openapi` is completed by `withRuntime`.
 *
 * @example
 * export const healthRoutes = (rt: RouteRuntime) =>
 *   routeApp(rt).openapi(health, (c) => c.json({ ok: true as const, store: rt.store.kind }, 200));
 */
export function routeApp(rt: RuntimeDocs): OpenAPIHono {
  const app = new OpenAPIHono({ defaultHook: problemHook });
  const register = app.openapi;
  app.openapi = ((route, handler, hook) => register(withRuntime(rt, route), handler, hook)) as typeof app.openapi;
  return app;
}
