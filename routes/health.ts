/** `GET /healthz`: liveness and the store kind. Never asks for a token (see routes/auth.ts). */
import { Hono } from "hono";
import type { RouteModule } from "./module.ts";
import type { RouteRuntime } from "./runtime.ts";
import { Health } from "./schemas.ts";

export function healthRoutes(rt: RouteRuntime): RouteModule {
  const app = new Hono();
  app.get("/healthz", (c) => c.json({ ok: true as const, store: rt.store.kind }));
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
    }],
  };
}
