/**
 * `GET /healthz`: liveness and the store kind; answers 200 while the process
 * serves requests, whatever the store does. `GET /readyz`: readiness; pings
 * the store (within the store timeout) and answers 503 `store_unavailable`
 * with `Retry-After` while it is unreachable or stalled. Neither asks for a
 * token (see routes/auth.ts).
 */
import { Hono } from "hono";
import type { RouteModule } from "./module.ts";
import { storeUnavailable } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { Health, Ready } from "./schemas.ts";

export function healthRoutes(rt: RouteRuntime): RouteModule {
  const app = new Hono();
  app.get("/healthz", (c) => c.json({ ok: true as const, store: rt.store.kind }));
  app.get("/readyz", async (c) => {
    try {
      await rt.store.ping();
    } catch (err) {
      rt.logger.warn("readiness: store ping failed", { error: String(err) });
      throw storeUnavailable(`The ${rt.store.kind} store did not answer a ping`);
    }
    return c.json({ ready: true as const, store: rt.store.kind });
  });
  return {
    app,
    operations: [{
      method: "get",
      path: "/healthz",
      operationId: "health",
      summary: "Liveness and the store kind",
      tags: ["operations"],
      auth: false,
      responses: { 200: { description: "Up", schema: { name: "Health", schema: Health } } },
      problems: [],
    }, {
      method: "get",
      path: "/readyz",
      operationId: "ready",
      summary: "Readiness: the store answers a ping",
      tags: ["operations"],
      auth: false,
      responses: { 200: { description: "Ready", schema: { name: "Ready", schema: Ready } } },
      problems: ["store_unavailable"],
    }],
  };
}
