/**
 * `DELETE /v1/agents/:agentId` (admin): removes the agent and every record
 * it owns, with its entries in the shared indexes (agents list, ready
 * queue, deadline index), in one store operation (store/port.ts invariant
 * 19). A worker still running one of its turns is fenced out: its next
 * commit finds no agent. Verdict records are kept: they are the audit trail
 * of what the agent's outputs were judged (`GET /v1/verdicts/:id` still
 * answers them; the agent's verdict list is gone). The id is free again: a
 * task sent to it creates a new agent from scratch.
 */
import { defineRoute, json, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { AgentDeleted, AgentParams } from "./schemas.ts";

const deleteAgent = defineRoute({
  method: "delete",
  path: "/v1/agents/{agentId}",
  operationId: "deleteAgent",
  summary: "Delete the agent and everything it stored (admin); verdict records are kept",
  description: "Removes the head, queue, mail, conversation, event log, turns, inputs, tool calls, checkpoints " +
    "and delivery records of the agent and its entries in the agents list, ready queue and deadline index, in " +
    "one atomic store operation. Verdict records stay readable by id (audit trail). A worker running one of " +
    "its turns is fenced out at its next commit.",
  tags: ["agents"],
  request: { params: AgentParams },
  responses: { 200: json("The agent was deleted", AgentDeleted) },
}, ["invalid_agent_id", "agent_not_found"]);

export function agentDeleteRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(deleteAgent, async (c) => {
    const { agentId } = c.req.valid("param");
    const r = await rt.store.deleteAgent(agentId);
    if (r.status === "agent_not_found") throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
    rt.logger.info("agent_deleted", { agentId });
    return c.json({ deleted: true as const, agentId }, 200);
  });
}
