/**
 * `GET /metrics`: the process metrics in the Prometheus text exposition
 * format 0.0.4 (actors/metrics.ts; every metric in docs/operations.md).
 * Behind bearer auth like every route but `/healthz` when auth is configured.
 * The ready-queue gauge reads the store once per worker target of this
 * process; a store that cannot be read answers 500 (the scrape fails, as it
 * should, rather than report a stale depth).
 */
import { Hono } from "hono";
import { createMetrics, METRICS_CONTENT_TYPE } from "../actors/metrics.ts";
import type { RouteModule } from "./module.ts";
import type { RouteRuntime } from "./runtime.ts";

export function metricsRoutes(rt: RouteRuntime): RouteModule {
  const app = new Hono();
  const metrics = rt.metrics ?? createMetrics();
  app.get("/metrics", async (c) => {
    const now = rt.clock.now();
    const ready = new Map<string, number>();
    for (const t of rt.workerTargets ?? []) ready.set(t, await rt.store.readyCount(t, now));
    return c.body(metrics.render(ready), 200, { "content-type": METRICS_CONTENT_TYPE });
  });
  return {
    app,
    operations: [{
      method: "get",
      path: "/metrics",
      operationId: "metrics",
      summary: "Process metrics (Prometheus text format 0.0.4)",
      tags: ["operations"],
      responses: { 200: { description: "The exposition text", contentType: "text/plain; version=0.0.4" } },
      problems: [],
    }],
  };
}
