/**
 * `POST /v1/agents/:agentId/tool-results`: delivers the result of an
 * external tool call (announced by a `tool_call` event with `external: true`).
 *
 * Only external calls take results here: a call the worker runs in-process
 * is answered by its own tool (or the watchdog), so a result for it is 409
 * `not_external` and changes nothing, whether the tool still runs or not.
 *
 * First wins per (agent, turn, toolCallId): the first delivery resolves the
 * call and mails it to the agent. A later one changes nothing and says what
 * happened: the same result again (outcome and afterExecution, compared as
 * canonical JSON) answers 200 `duplicate: true`; another result, or any
 * result after the watchdog's timeout, is 409 `already_resolved` with
 * `resolvedBy: "result" | "timeout"`. A call the store never recorded is 409
 * `unknown_tool_call`; a pending call of a turn that has ended (e.g.
 * cancelled) is 409 `turn_finished`; an external call that waits for a
 * person's approval (routes/approvals.ts) is 409 `approval_pending` and
 * changes nothing (store invariant `approval-before-result`); an in-process
 * one is `not_external` before and after its decision. While a cancel of the
 * call's turn is accepted and not yet applied, a result is 409
 * `turn_cancelling` and changes nothing (store invariant
 * `results-after-cancel`): the cancel ends the turn without it, and once it
 * has, the answer is `turn_finished`.
 *
 * Contracts: the result is checked against the tool's contract before it is
 * delivered (routes/tool-contract.ts); the answer says how that went in
 * `contract: { passed, mismatch }`.
 */
import { callerName } from "./auth.ts";
import { logGrew } from "./live-feed.ts";
import { BODY_PROBLEMS, defineRoute, json, jsonBody, routeApp } from "./define.ts";
import { normalizeOutcome } from "../common/outcome.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { AgentParams, ToolResultAccepted, ToolResultRequest } from "./schemas.ts";
import { checkDeliveredResult } from "./tool-contract.ts";

const deliverToolResult = defineRoute({
  method: "post",
  path: "/v1/agents/{agentId}/tool-results",
  operationId: "deliverToolResult",
  summary: "Deliver the result of an external tool call (first delivery wins; in-process calls are refused)",
  tags: ["agents"],
  request: { params: AgentParams, body: jsonBody(ToolResultRequest) },
  responses: {
    200: json("Accepted, or the same result as the delivery that won (duplicate; nothing changed)", ToolResultAccepted),
  },
}, [
  "invalid_agent_id", ...BODY_PROBLEMS, "agent_not_found", "unknown_tool_call", "not_external", "delegated_call", "already_resolved",
  "turn_finished", "turn_cancelling", "approval_pending",
], { verb: "deliver", signable: true });

export function toolResultRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(deliverToolResult, async (c) => {
    const { agentId } = c.req.valid("param");
    const body = c.req.valid("json");
    const call = { agentId, turnId: body.turnId, toolCallId: body.toolCallId };
    const checked = await checkDeliveredResult(rt, call, normalizeOutcome(body.outcome), body.afterExecution ?? "continue");
    const r = await rt.store.deliverToolResult({ ...call, ...checked, source: "http", by: callerName(c), now: rt.clock.now() });
    const contract = { passed: checked.contractValidation.passed, mismatch: checked.contractValidation.mismatch };
    switch (r.status) {
      case "accepted":
        logGrew(rt, agentId);
        rt.wake(agentId, c.req.raw);
        return c.json({ accepted: true as const, duplicate: false, contract }, 200);
      case "duplicate":
        return c.json({ accepted: true as const, duplicate: true, contract }, 200);
      case "already_resolved":
        throw new ProblemError(
          "already_resolved",
          r.resolvedBy === "timeout"
            ? `Tool call "${body.toolCallId}" timed out before this result arrived; the result was dropped`
            : `Tool call "${body.toolCallId}" was already resolved with another result; this one was dropped`,
          { extra: { resolvedBy: r.resolvedBy } },
        );
      case "delegated_call":
        throw new ProblemError(
          "delegated_call",
          `Tool call "${body.toolCallId}" hands its task to a child agent; only the child's result is applied`,
        );
      case "not_external":
        throw new ProblemError(
          "not_external",
          `Tool call "${body.toolCallId}" runs in-process in the worker; only its own result is applied`,
        );
      case "agent_not_found":
        throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
      case "unknown_call":
        throw new ProblemError(
          "unknown_tool_call",
          `Agent "${agentId}" has no tool call "${body.toolCallId}" in turn "${body.turnId}"`,
        );
      case "turn_finished":
        throw new ProblemError("turn_finished", `Turn "${body.turnId}" of agent "${agentId}" has finished`);
      case "cancel_pending":
        throw new ProblemError(
          "turn_cancelling",
          `Turn "${body.turnId}" of agent "${agentId}" has a pending cancel: it ends cancelled without using this result, so the result was not taken`,
        );
      case "approval_pending":
      case "not_due":
        // `not_due` answers only the watchdog; an HTTP delivery never sees it.
        throw new ProblemError(
          "approval_pending",
          `Tool call "${body.toolCallId}" waits for a person's approval (POST /v1/agents/${agentId}/approvals); no result is taken before it`,
        );
    }
  });
}
