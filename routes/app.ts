/** Minimal app (replaced by the full route set). */
import { Hono } from "hono";
import type { RouteRuntime } from "./runtime.ts";

export function createApp(rt: RouteRuntime): Hono {
  const app = new Hono();
  app.get("/healthz", (c) => c.json({ ok: true }));
  app.post("/v1/agents/:agentId/tasks", async (c) => {
    const body = await c.req.json();
    const agent = rt.agents.get(body.agent)!;
    const r = await rt.store.enqueueTask({
      agentId: c.req.param("agentId"), agentName: agent.name, workerTarget: agent.workerTarget,
      input: body.input, options: {}, idempotencyKey: body.idempotencyKey, turnId: rt.ids.turnId(), now: rt.clock.now(),
    });
    rt.wake();
    return c.json({ agentId: c.req.param("agentId"), ...r }, 202);
  });
  app.post("/v1/agents/:agentId/tool-results", async (c) => {
    const body = await c.req.json();
    const r = await rt.store.deliverToolResult({
      agentId: c.req.param("agentId"), turnId: body.turnId, toolCallId: body.toolCallId, outcome: body.outcome,
      afterExecution: body.afterExecution ?? "continue", source: "http", now: rt.clock.now(),
    });
    rt.wake();
    return c.json(r);
  });
  app.get("/v1/agents/:agentId", async (c) => c.json(await rt.store.getAgent(c.req.param("agentId"))));
  return app;
}
