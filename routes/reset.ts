/**
 * `POST /v1/agents/:agentId/reset`: an operator ends the agent's active turn
 * at once, whatever its state and whether or not its claims can run.
 *
 * Semantics (store/port.ts, invariant `turn-end-without-machine`): the turn ends `failed` with reason
 * `reset` (a `TURN_FAILED` transition and a `task` event are logged, open
 * tool calls get an error answer in the conversation), its pending mail is
 * dropped, its pending tool calls are answered 409 `turn_finished` from then
 * on, a worker still running it is fenced out (epoch + 1) and the tasks
 * queued behind it proceed. The agent keeps its conversation and queue.
 * To retry the work, enqueue the task again. Unlike a cancel, which the
 * machine applies at the turn's next claim, a reset needs no claim: it is
 * the way out for a turn whose claims fail (see `claim_error`).
 */
import { callerName } from "./auth.ts";
import { logGrew } from "./live-feed.ts";
import { turnEnd } from "../actors/host/turn-end.ts";
import { BODY_PROBLEMS, defineRoute, json, jsonBody, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { AgentParams, ResetAccepted, ResetRequest } from "./schemas.ts";

const DEFAULT_REASON = "Reset by request";
/** A commit landing between the read and the reset moves the head; read again this often. */
const ATTEMPTS = 10;

const resetAgent = defineRoute({
  method: "post",
  path: "/v1/agents/{agentId}/reset",
  operationId: "resetAgent",
  summary: "End the active turn at once (failed, reason `reset`); queued tasks proceed",
  description: "For a turn that cannot end by itself (e.g. its claims keep failing). The turn's pending mail is " +
    "dropped, a worker still running it is fenced out, its open tool calls are refused from then on. " +
    "Enqueue the task again to retry it.",
  tags: ["agents"],
  request: { params: AgentParams, body: jsonBody(ResetRequest, { required: false }) },
  responses: { 200: json("The turn was ended", ResetAccepted) },
}, ["invalid_agent_id", ...BODY_PROBLEMS, "agent_not_found", "not_active", "reset_conflict"], "admin");

export function resetRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(resetAgent, async (c) => {
    const { agentId } = c.req.valid("param");
    const reason = c.req.valid("json").reason ?? DEFAULT_REASON;
    for (let i = 0; i < ATTEMPTS; i++) {
      const head = await rt.store.getAgent(agentId);
      if (!head) throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
      if (head.activeTurnId === null) throw new ProblemError("not_active", `Agent "${agentId}" has no active turn to reset`);
      const now = rt.clock.now();
      const r = await rt.store.resetTurn({
        agentId, expectedVersion: head.version, turnId: head.activeTurnId, end: turnEnd(head, "reset", reason, now, callerName(c)), now,
      });
      if (r.status === "reset") {
        logGrew(rt, agentId);
        rt.wake();
        return c.json({ reset: true as const, turnId: head.activeTurnId, version: r.version }, 200);
      }
      if (r.status === "agent_not_found") throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
      if (r.status === "not_active") throw new ProblemError("not_active", `Agent "${agentId}" has no active turn to reset`);
    }
    throw new ProblemError("reset_conflict", `Agent "${agentId}" kept changing during the reset; try again`);
  });
}
