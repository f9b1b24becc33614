/**
 * What every adapter computes the same way for `decideApproval` (store/port.ts
 * invariant `first-decision-wins`): the status a decision stores, how a second
 * decision is answered, the error outcome of a rejection or a timeout, and the
 * `approval_decided` event, and the edited arguments an approval may carry.
 * The Lua script receives these values ready-made;
 * it only checks and writes.
 */
import { canonicalJson } from "../common/canonical-json.ts";
import type { Outcome } from "../common/outcome.ts";
import type { DecideApprovalRequest, DecideApprovalResult } from "./port.ts";
import { StoreInputError } from "./keys.ts";
import { type By, byField } from "../common/by.ts";
import type { ApprovalStatus, ToolCallRecord } from "./types.ts";

/** A decision's reason is kept up to this many characters. */
export const APPROVAL_REASON_CHARS = 2_000;

const STATUS: Record<DecideApprovalRequest["decision"], Exclude<ApprovalStatus, "pending">> = {
  approved: "approved",
  rejected: "rejected",
  timeout: "timeout",
};

/** The status `req` stores; throws StoreInputError for anything else. */
export function decisionStatus(req: DecideApprovalRequest): Exclude<ApprovalStatus, "pending"> {
  const s = Object.hasOwn(STATUS, req.decision) ? STATUS[req.decision] : undefined;
  if (!s) throw new StoreInputError(`decision must be approved, rejected or timeout, got ${JSON.stringify(req.decision)}`);
  return s;
}

/** The reason as stored: a string of at most APPROVAL_REASON_CHARS characters, or absent. */
export function decisionReason(req: DecideApprovalRequest): string | undefined {
  if (req.reason === undefined || req.reason === null) return undefined;
  return String(req.reason).slice(0, APPROVAL_REASON_CHARS);
}

/**
 * The edited arguments of an approval, or undefined; throws StoreInputError for arguments that are not a
 * JSON object or that come with another decision than `approved`.
 */
export function decisionArgs(req: DecideApprovalRequest): Record<string, unknown> | undefined {
  if (req.args === undefined) return undefined;
  if (req.decision !== "approved") throw new StoreInputError(`args come only with decision approved, got ${JSON.stringify(req.decision)}`);
  if (req.args === null || typeof req.args !== "object" || Array.isArray(req.args)) throw new StoreInputError("args must be a JSON object");
  return req.args;
}

const sameArgs = (a: unknown, b: unknown) => (a === undefined || b === undefined ? a === b : canonicalJson(a) === canonicalJson(b));

/**
 * The answer to a decision on a call decided before: `duplicate` for the same decision (an approval with
 * the same edited args, or none both times), else `conflict`.
 */
export function answerDecided(record: ToolCallRecord, req: DecideApprovalRequest): DecideApprovalResult {
  const same = record.approval?.status === decisionStatus(req) && sameArgs(record.approval?.args, decisionArgs(req));
  return same ? { status: "duplicate", record } : { status: "conflict", record };
}

/** The tool error the model sees for a call that was rejected or timed out waiting for approval. */
export function refusalOutcome(status: "rejected" | "timeout", reason: string | undefined): Outcome {
  const message = status === "rejected"
    ? `A person rejected this tool call; it did not run${reason ? `. Reason: ${reason}` : ""}`
    : "Nobody decided on this tool call before its approval deadline; it did not run";
  return {
    ok: false,
    error: {
      type: status === "rejected" ? "approval_rejected" : "approval_timeout",
      message,
      retryable: false,
      ...(reason !== undefined ? { metadata: { reason } } : {}),
    },
  };
}

/**
 * The `approval_decided` event's data; `args`: an approval's edited arguments (absent when the call runs
 * with the proposed ones); `by`: who decided. `deadline` comes last: the script appends its value.
 */
export function decidedEventData(
  toolCallId: string, status: ApprovalStatus, reason: string | undefined, deadline: number | null, args?: Record<string, unknown>, by?: By,
) {
  return { toolCallId, decision: status, reason: reason ?? null, ...(args !== undefined ? { args } : {}), ...byField(by), deadline };
}

/** The `by` a decision stores: the caller's for a person's decision, none for the watchdog's timeout. */
export function decisionBy(req: DecideApprovalRequest): { by?: By } {
  return req.decision === "timeout" ? {} : byField(req.by);
}
