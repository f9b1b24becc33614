/**
 * `DELETE /v1/agents/:agentId` (admin): removes the agent and every record
 * it owns, with its entries in the shared indexes (agents list, ready
 * queue, deadline index), in one store operation (store/port.ts invariant
 * `deletion`). A worker still running one of its turns is fenced out: its next
 * commit finds no agent. Verdict records are kept: they are the audit trail
 * of what the agent's outputs were judged (`GET /v1/verdicts/:id` still
 * answers them; the agent's verdict list is gone). The id is free again: a
 * task sent to it creates a new agent from scratch; only a delegation's
 * dispatch sees the deletion marker the store leaves (store/port.ts
 * invariant `deletion-marker`), so a deleted child is never created again by its parent.
 * A delegated child deleted while its turn ran has its parent's call
 * answered right after the delete (`delegation_failed`, `child_deleted`;
 * actors/delegation/delegation.ts, 6a); the parent's next poll does the same for a
 * child deleted while its task was queued.
 */
import { answerDeletedChild } from "../actors/delegation/delegation.ts";
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
    "its turns is fenced out at its next commit. A delegated child is never created again by its parent: " +
    "the parent's call fails with `delegation_failed` (reason `child_deleted`).",
  tags: ["agents"],
  request: { params: AgentParams },
  responses: { 200: json("The agent was deleted", AgentDeleted) },
}, ["invalid_agent_id", "agent_not_found"], "admin");

export function agentDeleteRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(deleteAgent, async (c) => {
    const { agentId } = c.req.valid("param");
    const before = await rt.store.getAgent(agentId);
    const now = rt.clock.now();
    const r = await rt.store.deleteAgent(agentId, now);
    if (r.status === "agent_not_found") throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
    rt.logger.info("agent_deleted", { agentId });
    if (before) {
      try {
        const d = await answerDeletedChild(rt.store, rt.agents, before, now);
        if (d) rt.logger.info("delegation_child_deleted", { childAgentId: agentId, status: d.status });
      } catch (err) {
        // The parent's next poll answers the call (its dispatch is refused by the marker).
        rt.logger.warn("could not answer the parent of a deleted child", { agentId, error: String(err) });
      }
    }
    return c.json({ deleted: true as const, agentId }, 200);
  });
}
