/**
 * `POST /v1/agents/:agentId/tool-results`: delivers the result of an
 * external tool call (announced by a `tool_call` event with `external: true`).
 *
 * First wins per (agent, turn, toolCallId): the first delivery resolves the
 * call and mails it to the agent; a later one — a retry of the same request,
 * or a result racing the watchdog's timeout — answers 200 with
 * `duplicate: true` and changes nothing. A call the store never recorded is
 * 409 `unknown_tool_call`; a pending call of a turn that has ended (e.g.
 * cancelled) is 409 `turn_finished`.
 */
import { Hono } from "hono";
import { jsonBody } from "./body.ts";
import { BODY_PROBLEMS, type RouteModule } from "./module.ts";
import { normalizeOutcome } from "../common/outcome.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { ToolResultAccepted, ToolResultRequest } from "./schemas.ts";

export function toolResultRoutes(rt: RouteRuntime): RouteModule {
  const app = new Hono();

  app.post("/v1/agents/:agentId/tool-results", async (c) => {
    const agentId = c.req.param("agentId");
    const body = await jsonBody(c, rt.limits, ToolResultRequest);
    const r = await rt.store.deliverToolResult({
      agentId,
      turnId: body.turnId,
      toolCallId: body.toolCallId,
      outcome: normalizeOutcome(body.outcome),
      afterExecution: body.afterExecution ?? "continue",
      source: "http",
      now: rt.clock.now(),
    });
    switch (r.status) {
      case "accepted":
        rt.wake(agentId, c.req.raw);
        return c.json({ accepted: true as const, duplicate: false });
      case "duplicate":
        return c.json({ accepted: true as const, duplicate: true });
      case "agent_not_found":
        throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
      case "unknown_call":
        throw new ProblemError(
          "unknown_tool_call",
          `Agent "${agentId}" has no tool call "${body.toolCallId}" in turn "${body.turnId}"`,
        );
      case "turn_finished":
        throw new ProblemError("turn_finished", `Turn "${body.turnId}" of agent "${agentId}" has finished`);
    }
  });

  return {
    app,
    operations: [{
      method: "post",
      path: "/v1/agents/:agentId/tool-results",
      operationId: "deliverToolResult",
      summary: "Deliver the result of an external tool call (first delivery wins)",
      tags: ["agents"],
      body: { schema: { name: "ToolResultRequest", schema: ToolResultRequest }, required: true },
      responses: {
        200: {
          description: "Accepted, or a duplicate of an earlier delivery (nothing changed)",
          schema: { name: "ToolResultAccepted", schema: ToolResultAccepted },
        },
      },
      problems: ["invalid_agent_id", ...BODY_PROBLEMS, "agent_not_found", "unknown_tool_call", "turn_finished"],
    }],
  };
}
