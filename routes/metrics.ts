/**
 * `GET /metrics`: the process metrics in the Prometheus text exposition
 * format 0.0.4 (actors/observe/metrics.ts; every metric in docs/operations.md).
 * Behind bearer auth like every route but `/healthz` when auth is configured.
 * The ready-queue gauge reads the store once per worker target of this
 * process; a store that cannot be read answers 500 (the scrape fails, as it
 * should, rather than report a stale depth). The lane gauges read the
 * store's `concurrencyUsage` once per target too, at most `metricsLanes`
 * lanes one by one (actors/observe/lane-gauges.ts).
 */
import { z } from "@hono/zod-openapi";
import { createMetrics, METRICS_CONTENT_TYPE } from "../actors/observe/metrics.ts";
import { laneGauges } from "../actors/observe/lane-gauges.ts";
import { DEFAULT_METRICS_LANES } from "../common/concurrency.ts";
import { defineRoute, routeApp } from "./define.ts";
import type { RouteRuntime } from "./runtime.ts";
import { pinnedTurns, waitingTurns } from "./versions.ts";

const metricsRoute = defineRoute({
  method: "get",
  path: "/metrics",
  operationId: "metrics",
  summary: "Process metrics (Prometheus text format 0.0.4)",
  tags: ["operations"],
  responses: {
    200: { description: "The exposition text", content: { "text/plain; version=0.0.4": { schema: z.string() } } },
  },
}, [], { verb: "admin", global: true });

export function metricsRoutes(rt: RouteRuntime) {
  const metrics = rt.metrics ?? createMetrics();
  return routeApp(rt).openapi(metricsRoute, async (c) => {
    const now = rt.clock.now();
    const ready = new Map<string, number>();
    const usages = [];
    const n = rt.metricsLanes ?? DEFAULT_METRICS_LANES;
    const limits = rt.concurrencyLimits !== undefined ? { concurrencyLimits: rt.concurrencyLimits } : {};
    for (const t of rt.workerTargets ?? []) {
      ready.set(t, await rt.store.readyCount(t, now));
      usages.push(await rt.store.concurrencyUsage({ workerTarget: t, now, limit: n, ...limits }));
    }
    // Turns waiting for a definition version no live process has (routes/versions.ts; the newest 1 000 agents read).
    const waiting = waitingTurns(rt, (await pinnedTurns(rt)).counts);
    const text = metrics.render(ready, laneGauges(usages, n)) + "# HELP gatehouse_turns_waiting_for_version Active turns pinned to a definition version no live process has\n" +
      "# TYPE gatehouse_turns_waiting_for_version gauge\n" + `gatehouse_turns_waiting_for_version ${waiting}\n`;
    return c.text(text, 200, { "content-type": METRICS_CONTENT_TYPE });
  });
}
