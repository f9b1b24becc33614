/**
 * `POST /v1/watchdog/tick`: one watchdog pass, for cron on runtimes without a
 * long-lived worker. Tool calls past their resume deadline get a timeout
 * result through the same first-wins path as HTTP results, so a tick racing a
 * result (or another tick) records exactly one of them. Takes no body (an
 * empty one or `{}` is accepted).
 */
import { BODY_PROBLEMS, defineRoute, json, jsonBody, routeApp } from "./define.ts";
import type { RouteRuntime } from "./runtime.ts";
import { EmptyRequest, WatchdogTick } from "./schemas.ts";

const watchdogTick = defineRoute({
  method: "post",
  path: "/v1/watchdog/tick",
  operationId: "watchdogTick",
  summary: "Time out tool calls past their deadline and wake their agents",
  tags: ["operations"],
  request: { body: jsonBody(EmptyRequest, { required: false }) },
  responses: { 200: json("Counts of the pass", WatchdogTick) },
}, [...BODY_PROBLEMS], { verb: "admin", global: true });

export function watchdogRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(watchdogTick, async (c) => {
    const r = await rt.watchdogTick(c.req.raw);
    return c.json({ timedOut: r.timedOut, alreadyResolved: r.alreadyResolved, turnFinished: r.turnFinished, skipped: r.skipped }, 200);
  });
}
