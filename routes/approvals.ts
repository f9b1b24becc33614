/**
 * `POST /v1/agents/:agentId/approvals`: a person's decision on a tool call
 * that needs approval (tools/define.ts `needsApproval`; the call is listed in
 * the agent view with `approval: "pending"` and logged as
 * `approval_requested`).
 *
 * First decision wins per (agent, turn, toolCallId) (store invariant
 * `first-decision-wins`): the first one is stored, logged as
 * `approval_decided` and rings the agent, which runs an approved in-process
 * call, waits for an approved external call's result (POST
 * …/tool-results), or hands a rejection to the model as the tool error
 * `approval_rejected` with the reason. The same decision again answers 200
 * `duplicate: true` and changes nothing; the other decision (or any
 * decision after the approval timed out) is 409 `approval_conflict` with
 * the stored `decision`. A call the store never recorded is 409
 * `unknown_tool_call`, a call that needs no approval 409
 * `not_awaiting_approval`, an undecided call of a turn that has ended 409
 * `turn_finished`. Verb `approve` (docs/security.md). The decision records
 * who took it (`by`: the token's name, routes/auth.ts `callerName`) on the
 * call's approval and its `approval_decided` event.
 *
 * Edit, then approve: `args` with `approved: true` replaces the call's
 * arguments. They are checked first, as the worker checks a call's
 * arguments (agents/edited-args.ts), against the tool the call was recorded
 * for: an edit the tool refuses (or `args` with `approved: false`) is 400
 * `validation_failed` with the issues in `errors` (paths start at `args`)
 * and decides nothing. The record keeps the proposed `args` and the edited
 * ones in `approval.args`; `approval_decided` carries the edited ones. A
 * process without the call's definition stores the edit unchecked, and the
 * worker's own check answers a bad one with `invalid_arguments`. The same
 * approval again is a duplicate only with the same `args` (canonical JSON),
 * or none both times; otherwise it is 409 `approval_conflict`.
 */
import type { By } from "../common/by.ts";
import { callerName } from "./auth.ts";
import { z } from "@hono/zod-openapi";
import { editIssues, toolOfCall } from "../agents/edited-args.ts";
import { checkSnapshot } from "../machines/persist.ts";
import { describeIssues } from "./body.ts";
import { logGrew } from "./live-feed.ts";
import { BODY_PROBLEMS, defineRoute, json, jsonBody, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { AgentParams, TurnId } from "./schemas.ts";

const ToolCallId = z.string().min(1).max(256).describe("The tool call's id (from its `approval_requested` event or `pendingToolCalls`)");

export const ApprovalRequest = z.strictObject({
  turnId: TurnId,
  toolCallId: ToolCallId,
  approved: z.boolean().describe("true: the call runs; false: it never runs and the model sees `approval_rejected`"),
  reason: z.string().max(2_000).optional().describe("Why; a rejection's reason reaches the model in its tool error"),
  args: z.record(z.string(), z.unknown()).optional().describe(
    "Only with `approved: true`: the arguments the call runs with instead of the proposed ones, checked against the " +
      "tool's schema (refused: 400 `validation_failed`, nothing decided). The model sees its own call and, with the " +
      "result, a note of the edited arguments",
  ),
}).openapi("ApprovalRequest");

export const ApprovalDecided = z.object({
  decided: z.literal(true),
  duplicate: z.boolean().describe("True when this decision was taken before; nothing changed"),
  decision: z.enum(["approved", "rejected"]),
  deadline: z.number().nullable().describe("Approved: the call's deadline from now on (ms); null for a rejection"),
}).openapi("ApprovalDecided");

const decideApproval = defineRoute({
  method: "post",
  path: "/v1/agents/{agentId}/approvals",
  operationId: "decideApproval",
  summary: "Approve or reject a tool call that waits for a person's approval (first decision wins)",
  tags: ["agents"],
  request: { params: AgentParams, body: jsonBody(ApprovalRequest) },
  responses: {
    200: json("Decided, or the same decision as the one taken before (duplicate; nothing changed)", ApprovalDecided),
  },
}, [
  "invalid_agent_id", ...BODY_PROBLEMS, "agent_not_found", "unknown_tool_call", "not_awaiting_approval", "approval_conflict", "turn_finished",
], { verb: "approve" });

export function approvalRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(decideApproval, async (c) => {
    const { agentId } = c.req.valid("param");
    return c.json(await decide(rt, agentId, c.req.valid("json"), c.req.raw, callerName(c)), 200);
  });
}

/** Decides a tool call's approval (first decision wins) as `by` (routes/auth.ts `callerName`); throws the route's problems. Also used by POST /v1/chat. */
export async function decide(rt: RouteRuntime, agentId: string, body: z.infer<typeof ApprovalRequest>, req: Request, by: By) {
  const decision = body.approved ? "approved" as const : "rejected" as const;
  if (body.args !== undefined) await checkEdit(rt, agentId, body);
  const r = await rt.store.decideApproval({
    agentId, turnId: body.turnId, toolCallId: body.toolCallId, decision, by, now: rt.clock.now(),
    ...(body.reason !== undefined ? { reason: body.reason } : {}),
    ...(body.args !== undefined ? { args: body.args } : {}),
  });
  const deadline = (rec: { deadline: number }) => (decision === "approved" ? rec.deadline : null);
  switch (r.status) {
    case "decided":
      logGrew(rt, agentId);
      rt.wake(agentId, req);
      return { decided: true as const, duplicate: false, decision, deadline: deadline(r.record) };
    case "duplicate":
      return { decided: true as const, duplicate: true, decision, deadline: deadline(r.record) };
    case "conflict": {
      const stored = r.record.approval?.status ?? "pending";
      throw new ProblemError(
        "approval_conflict",
        stored === "timeout"
          ? `Tool call "${body.toolCallId}" timed out waiting for approval; it did not run`
          : `Tool call "${body.toolCallId}" was already ${stored}; this decision was dropped`,
        { extra: { decision: stored } },
      );
    }
    case "not_awaiting_approval":
      throw new ProblemError("not_awaiting_approval", `Tool call "${body.toolCallId}" needs no approval`);
    case "agent_not_found":
      throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
    case "unknown_call":
      throw new ProblemError("unknown_tool_call", `Agent "${agentId}" has no tool call "${body.toolCallId}" in turn "${body.turnId}"`);
    case "turn_finished":
    case "not_due":
      // `not_due` answers only the watchdog's timeout; a person's decision never sees it.
      throw new ProblemError("turn_finished", `Turn "${body.turnId}" of agent "${agentId}" has finished`);
  }
}

/** Refuses edited `args` the call's tool would refuse, or that come with a rejection: 400 `validation_failed`, nothing decided. */
async function checkEdit(rt: RouteRuntime, agentId: string, body: z.infer<typeof ApprovalRequest>): Promise<void> {
  const refuse = (errors: Array<{ path: Array<string | number>; code: string; message: string }>) => {
    throw new ProblemError("validation_failed", describeIssues("body", errors), { extra: { errors } });
  };
  if (!body.approved) refuse([{ path: ["args"], code: "custom", message: "args come only with approved: true (an edit is an approval)" }]);
  const head = await rt.store.getAgent(agentId);
  if (!head) return; // the store answers agent_not_found
  const record = (await rt.store.getToolCalls(agentId, body.turnId)).find((c) => c.toolCallId === body.toolCallId);
  if (!record) return; // the store answers unknown_tool_call
  let definition: string | undefined;
  try {
    definition = head.snapshot ? checkSnapshot(head.snapshot).context.definition : undefined;
  } catch {
    definition = undefined;
  }
  const tool = toolOfCall(rt.agents, definition, head.agentName, record.name);
  if (!tool) return; // not checkable here: the worker checks the arguments before the tool runs
  const issues = editIssues(tool, body.args!);
  if (issues.length > 0) refuse(issues.map((i) => ({ ...i, path: ["args", ...i.path] })));
}
