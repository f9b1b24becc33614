/**
 * Approvals of the script store (store/port.ts `Approvals`, invariant
 * `first-decision-wins`): one call of store/lua/decide_approval.lua, described
 * here (store/script/operation.ts), whose values are built here
 * (store/approvals.ts computes them for every adapter).
 */
import type { DecideApprovalRequest, DecideApprovalResult } from "../port.ts";
import { answerDecided, decidedEventData, decisionArgs, decisionBy, decisionReason, decisionStatus, refusalOutcome } from "../approvals.ts";
import { notApplied } from "../../common/contract-validation.ts";
import type { ToolCallRecord } from "../types.ts";
import { int, j, tail } from "./values.ts";
import { json, scriptOp } from "./operation.ts";
import type { ScriptContext } from "./context.ts";

/** store/lua/decide_approval.lua */
export const DECIDE_APPROVAL = scriptOp({
  script: "decide_approval",
  keys: ["head", "calls", "mail", "events", "deadlines"],
  argv: ["prefix", "agent_id", "turn_json", "turn_id", "call_id", "decision", "now_str", "approval_tail", "resolution", "mail_tail", "event_tail", "result_tail"],
  words: ["decided", "decided_before", "not_awaiting_approval", "not_due", "agent_not_found", "unknown_call", "turn_finished"],
}, (word, payload) =>
  // 'decided_before' is turned into duplicate / conflict by answerDecided (store/approvals.ts).
  (word === "decided" || word === "decided_before" ? { status: word, record: json(payload) } : { status: word }) as
    | DecideApprovalResult
    | { status: "decided_before"; record: ToolCallRecord });

export async function decideApproval(c: ScriptContext, req: DecideApprovalRequest): Promise<DecideApprovalResult> {
  const { keys, dropHints, run } = c;
  const status = decisionStatus(req);
  const reason = decisionReason(req);
  const args = decisionArgs(req);
  dropHints(req.now);
  const k = keys.agent(req.agentId);
  const now = int(req.now, "now");
  const approved = status === "approved";
  const ids = { turnId: req.turnId, toolCallId: req.toolCallId };
  // The approval after its runMs (which the script reads from the stored call).
  const by = decisionBy(req);
  const approvalTail = `,${j({ status, decidedAt: req.now, ...(reason !== undefined ? { reason } : {}), ...(args !== undefined ? { args } : {}), ...by }).slice(1)}`;
  let resolution = "";
  let mailTail: string;
  let resultTail = "";
  // The approval's deadline is computed by the script (now + runMs): the texts end before its value.
  const eventTail = tail({ type: "approval_decided", data: decidedEventData(req.toolCallId, status, reason, null, args, by.by) });
  if (approved) {
    mailTail = tail({ kind: "approval", at: req.now, ...ids, ...(args !== undefined ? { args } : {}) }).slice(0, -1);
  } else {
    const outcome = refusalOutcome(status, reason);
    const source = status === "rejected" ? "approval" : "watchdog";
    const contractValidation = notApplied();
    resolution = j({ status: "resolved", outcome, afterExecution: "continue", source, resolvedAt: req.now, contractValidation });
    mailTail = tail({ kind: "tool_result", at: req.now, ...ids, outcome, afterExecution: "continue", source });
    resultTail = tail({ type: "tool_result_received", data: { toolCallId: req.toolCallId, ok: false, source, afterExecution: "continue", contractValidation } });
  }
  const r = await run(DECIDE_APPROVAL, {
    head: k.head, calls: k.calls(req.turnId), mail: k.mail, events: k.events, deadlines: k.home.deadlines,
    prefix: k.home.prefix, agent_id: req.agentId, turn_json: j(req.turnId), turn_id: req.turnId, call_id: req.toolCallId,
    decision: status, now_str: now, approval_tail: approvalTail, resolution, mail_tail: mailTail,
    event_tail: approved ? eventTail.slice(0, -"null}}".length) : eventTail, result_tail: resultTail,
  });
  return r.status === "decided_before" ? answerDecided(r.record, req) : r;
}
