/**
 * `POST /v1/watchdog/tick`: one watchdog pass, for cron on runtimes without a
 * long-lived worker. Tool calls past their resume deadline get a timeout
 * result through the same first-wins path as HTTP results, so a tick racing a
 * result (or another tick) records exactly one of them. Takes no body (an
 * empty one or `{}` is accepted).
 */
import { Hono } from "hono";
import { optionalJsonBody } from "./body.ts";
import { BODY_PROBLEMS, type RouteModule } from "./module.ts";
import type { RouteRuntime } from "./runtime.ts";
import { EmptyRequest, WatchdogTick } from "./schemas.ts";

export function watchdogRoutes(rt: RouteRuntime): RouteModule {
  const app = new Hono();
  app.post("/v1/watchdog/tick", async (c) => {
    await optionalJsonBody(c, rt.limits, EmptyRequest);
    const r = await rt.watchdogTick(c.req.raw);
    return c.json({ timedOut: r.timedOut, alreadyResolved: r.alreadyResolved, turnFinished: r.turnFinished, skipped: r.skipped });
  });
  return {
    app,
    operations: [{
      method: "post",
      path: "/v1/watchdog/tick",
      operationId: "watchdogTick",
      summary: "Time out tool calls past their deadline and wake their agents",
      tags: ["operations"],
      body: { schema: { name: "EmptyRequest", schema: EmptyRequest }, required: false },
      responses: { 200: { description: "Counts of the pass", schema: { name: "WatchdogTick", schema: WatchdogTick } } },
      problems: [...BODY_PROBLEMS],
    }],
  };
}
