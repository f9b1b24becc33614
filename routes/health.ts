/**
 * `GET /healthz`: liveness and the store kind; answers 200 while the process
 * serves requests, whatever the store does; 503 `{ ok: false, status:
 * "draining" }` once a shutdown began (`Gatehouse.drainWorker`: the process
 * stopped claiming and finishes or hands back its claims before it exits). `GET /readyz`: readiness; pings
 * the store (within the store timeout) and answers 503 `store_unavailable`
 * with `Retry-After` while it is unreachable or stalled. Neither asks for a
 * token (see routes/auth.ts).
 */
import { defineRoute, json, routeApp } from "./define.ts";
import { storeUnavailable } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { Draining, Health, Ready } from "./schemas.ts";

const health = defineRoute({
  method: "get",
  path: "/healthz",
  operationId: "health",
  summary: "Liveness and the store kind",
  tags: ["operations"],
  responses: { 200: json("Up", Health), 503: json("Draining: the process is shutting down (docs/operations.md, \"Upgrades\")", Draining) },
}, [], "public");

const ready = defineRoute({
  method: "get",
  path: "/readyz",
  operationId: "ready",
  summary: "Readiness: the store answers a ping",
  tags: ["operations"],
  responses: { 200: json("Ready", Ready) },
}, ["store_unavailable"], "public");

export function healthRoutes(rt: RouteRuntime) {
  return routeApp(rt)
    .openapi(health, (c) =>
      rt.draining?.on
        ? c.json({ ok: false as const, status: "draining" as const, store: rt.store.kind }, 503)
        : c.json({ ok: true as const, store: rt.store.kind }, 200))
    .openapi(ready, async (c) => {
      try {
        await rt.store.ping();
      } catch (err) {
        rt.logger.warn("readiness: store ping failed", { error: String(err) });
        throw storeUnavailable(`The ${rt.store.kind} store did not answer a ping`);
      }
      return c.json({ ready: true as const, store: rt.store.kind }, 200);
    });
}
