/**
 * Approvals in the memory store (store/port.ts `Approvals`, invariant
 * `first-decision-wins`); store/lua/decide_approval.lua is its Redis twin.
 */
import type { DecideApprovalRequest, DecideApprovalResult } from "../port.ts";
import { answerDecided, decidedEventData, decisionArgs, decisionBy, decisionReason, decisionStatus, refusalOutcome } from "../approvals.ts";
import { notApplied } from "../../common/contract-validation.ts";
import type { MailItem, ToolCallRecord } from "../types.ts";
import { callKey } from "./records.ts";
import type { MemoryState } from "./state.ts";

export async function decideApproval(s: MemoryState, req: DecideApprovalRequest): Promise<DecideApprovalResult> {
  const { agents, deadlines, atomic, copy, w, ring, eventOf, appendEvents } = s;
  return atomic((): DecideApprovalResult => {
    const status = decisionStatus(req);
    const reason = decisionReason(req);
    const args = decisionArgs(req);
    const a = agents.get(req.agentId);
    if (!a) return { status: "agent_not_found" };
    const key = callKey(req.turnId, req.toolCallId);
    const rec = a.toolCalls.get(key);
    if (!rec) return { status: "unknown_call" };
    if (!rec.approval) return { status: "not_awaiting_approval" };
    if (rec.approval.status !== "pending") return answerDecided(copy(rec), req);
    if (a.head.activeTurnId !== req.turnId || rec.status !== "pending") return { status: "turn_finished" };
    if (status === "timeout" && rec.deadline > req.now) return { status: "not_due" };
    const by = decisionBy(req);
    const approval = { ...rec.approval, status, decidedAt: req.now, ...(reason !== undefined ? { reason } : {}), ...(args !== undefined ? { args: copy(args) } : {}), ...by };
    const member = `${req.agentId}\n${req.turnId}\n${req.toolCallId}`;
    const seq = a.mailSeq + 1;
    let next: ToolCallRecord;
    let mail: MailItem;
    const events = [];
    if (status === "approved") {
      next = { ...rec, deadline: req.now + rec.approval.runMs, approval };
      mail = {
        kind: "approval", seq, at: req.now, turnId: req.turnId, toolCallId: req.toolCallId, ...(args !== undefined ? { args: copy(args) } : {}), deadline: next.deadline,
      };
      events.push(eventOf(a, 1, req.turnId, "approval_decided", decidedEventData(req.toolCallId, status, reason, next.deadline, args && copy(args), by.by), req.now));
    } else {
      const outcome = refusalOutcome(status, reason);
      const source = status === "rejected" ? "approval" as const : "watchdog" as const;
      next = { ...rec, approval, status: "resolved", outcome, afterExecution: "continue", source, resolvedAt: req.now, contractValidation: notApplied() };
      mail = { kind: "tool_result", seq, at: req.now, turnId: req.turnId, toolCallId: req.toolCallId, outcome: copy(outcome), afterExecution: "continue", source };
      events.push(eventOf(a, 1, req.turnId, "approval_decided", decidedEventData(req.toolCallId, status, reason, null, undefined, by.by), req.now));
      events.push(eventOf(a, 2, req.turnId, "tool_result_received", {
        toolCallId: req.toolCallId, ok: false, source, afterExecution: "continue", contractValidation: notApplied(),
      }, req.now));
    }
    const stored = copy(next);
    const reply = copy(next);
    // Writes.
    w.mapSet(a.toolCalls, key, stored);
    if (status === "approved") w.mapSet(deadlines, member, stored.deadline);
    else w.mapDelete(deadlines, member);
    w.set(a, "mailSeq", seq);
    w.push(a.mail, mail);
    w.set(a.head, "pendingMail", a.mail.length);
    appendEvents(a, events);
    ring(a, req.now);
    return { status: "decided", record: reply };
  });
}
