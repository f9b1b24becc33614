/**
 * Agent routes: enqueue a task, read an agent, cancel its turn.
 *
 * - `POST /v1/agents/:agentId/tasks` writes the task into the inbox (the
 *   store assigns nothing: the turn id comes from `rt.ids`), then rings.
 *   The first task binds the id to a definition; a task naming another one
 *   is refused (409). An idempotency key seen before answers the first
 *   task's turn with `duplicate: true` and enqueues nothing.
 * - `GET /v1/agents/:agentId` answers the view of routes/agent-view.ts.
 * - `POST /v1/agents/:agentId/cancel` mails a cancel to the active turn.
 */
import { Hono } from "hono";
import { agentView } from "./agent-view.ts";
import { jsonBody, optionalJsonBody } from "./body.ts";
import { BODY_PROBLEMS, type RouteModule } from "./module.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { AgentView, CancelAccepted, CancelRequest, TaskAccepted, TaskRequest } from "./schemas.ts";

const DEFAULT_CANCEL_REASON = "Cancelled by request";

export function agentRoutes(rt: RouteRuntime): RouteModule {
  const app = new Hono();
  const max = rt.limits.maxBodyBytes;

  app.post("/v1/agents/:agentId/tasks", async (c) => {
    const agentId = c.req.param("agentId");
    const body = await jsonBody(c, max, TaskRequest);
    const def = rt.agents.get(body.agent);
    if (!def) {
      throw new ProblemError("unknown_agent_definition", `No agent definition is named ${JSON.stringify(body.agent)}`);
    }
    const r = await rt.store.enqueueTask({
      agentId,
      agentName: def.name,
      workerTarget: def.workerTarget,
      input: body.input,
      options: body.verifyMaxAttempts !== undefined ? { verifyMaxAttempts: body.verifyMaxAttempts } : {},
      ...(body.idempotencyKey !== undefined ? { idempotencyKey: body.idempotencyKey } : {}),
      turnId: rt.ids.turnId(),
      now: rt.clock.now(),
    });
    if (r.status === "definition_conflict") {
      throw new ProblemError(
        "agent_definition_conflict",
        `Agent "${agentId}" is bound to definition "${r.boundTo}", not "${def.name}"`,
        { extra: { boundTo: r.boundTo } },
      );
    }
    // A duplicate enqueued nothing: no bell to ring.
    if (r.status === "enqueued") rt.wake(agentId, c.req.raw);
    return c.json({ agentId, turnId: r.turnId, duplicate: r.status === "duplicate" }, 202);
  });

  app.get("/v1/agents/:agentId", async (c) => {
    const agentId = c.req.param("agentId");
    const head = await rt.store.getAgent(agentId);
    if (!head) throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
    return c.json(agentView(head));
  });

  app.post("/v1/agents/:agentId/cancel", async (c) => {
    const agentId = c.req.param("agentId");
    const body = await optionalJsonBody(c, max, CancelRequest);
    const r = await rt.store.requestCancel({
      agentId,
      reason: body?.reason ?? DEFAULT_CANCEL_REASON,
      now: rt.clock.now(),
    });
    if (r.status === "agent_not_found") throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
    if (r.status === "not_active") {
      throw new ProblemError("not_active", `Agent "${agentId}" has no active turn to cancel`);
    }
    rt.wake(agentId, c.req.raw);
    return c.json({ accepted: true as const }, 202);
  });

  return {
    app,
    operations: [
      {
        method: "post",
        path: "/v1/agents/:agentId/tasks",
        operationId: "enqueueTask",
        summary: "Enqueue a task (starts a turn when the agent is free)",
        description: "The first task binds the agent id to a definition. A repeated `idempotencyKey` answers " +
          "the first task's turn with `duplicate: true` and enqueues nothing.",
        tags: ["agents"],
        body: { schema: { name: "TaskRequest", schema: TaskRequest }, required: true },
        responses: { 202: { description: "Enqueued (or a duplicate)", schema: { name: "TaskAccepted", schema: TaskAccepted } } },
        problems: ["invalid_agent_id", ...BODY_PROBLEMS, "agent_definition_conflict", "unknown_agent_definition"],
      },
      {
        method: "get",
        path: "/v1/agents/:agentId",
        operationId: "getAgent",
        summary: "Read an agent: state, turn, pending tool calls, output, usage",
        tags: ["agents"],
        responses: { 200: { description: "The agent", schema: { name: "AgentView", schema: AgentView } } },
        problems: ["invalid_agent_id", "agent_not_found", "snapshot_unrestorable"],
      },
      {
        method: "post",
        path: "/v1/agents/:agentId/cancel",
        operationId: "cancelTurn",
        summary: "Cancel the active turn (it fails with reason `cancelled`)",
        tags: ["agents"],
        body: { schema: { name: "CancelRequest", schema: CancelRequest }, required: false },
        responses: { 202: { description: "Cancel mailed", schema: { name: "CancelAccepted", schema: CancelAccepted } } },
        problems: ["invalid_agent_id", ...BODY_PROBLEMS, "agent_not_found", "not_active"],
      },
    ],
  };
}
