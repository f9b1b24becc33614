/**
 * The conversation as a pure function of transitions: given an event and the
 * contexts before and after it, which messages are appended. Because it is
 * pure, replaying the event log rebuilds the history exactly. Every assistant
 * tool call gets exactly one tool message before the next model call, as
 * chat-completions APIs require.
 *
 * Values are turned into text with a bounded check first (common/json-bounds):
 * a value nested deeper than HARD_MAX_DEPTH becomes a fixed error text
 * instead of overflowing the stack, so building the transcript never throws
 * on data. Entry points refuse such values long before (HTTP bodies, model
 * responses, tool results); this is the last line.
 */
import { classifyStep, completionCall, requiredEnding } from "../../machines/agent.ts";
import type { AgentContext, AgentEvent, VerificationState } from "../../machines/types.ts";
import type { Message } from "../../common/message.ts";
import type { Outcome } from "../../common/outcome.ts";
import { canonicalJson } from "../../verification/hash.ts";
import { safeJsonText as jsonText } from "../../common/json-bounds.ts";
import { inputText } from "../../store/inputs.ts";

/** Upper bound for the verifier feedback text given to the model. */
export const FEEDBACK_LIMIT = 2000;


export function outcomeText(outcome: Outcome): string {
  return outcome.ok
    ? (typeof outcome.value === "string" ? outcome.value : jsonText(outcome.value ?? null))
    : jsonText({ error: outcome.error });
}

function canonicalText(v: unknown): string {
  try {
    return canonicalJson(v);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    return jsonText({ error: { type: "json_limit_exceeded", message: err.message } });
  }
}

const escapeAttr = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

/** Cuts `s` to at most `n` UTF-16 units without splitting a surrogate pair. */
function cut(s: string, n: number): string {
  if (s.length <= n) return s;
  const end = /[\uD800-\uDBFF]/.test(s[n - 1] ?? "") ? n - 1 : n;
  return s.slice(0, Math.max(0, end));
}

/**
 * `<verification_rejected code="…" retryable="…">…</verification_rejected>`:
 * the rejection message, then its metadata as canonical JSON. Deterministic
 * (same rejection, same bytes) and at most FEEDBACK_LIMIT characters; a
 * closing tag inside the message is defused so the block stays one block.
 */
export function feedbackText(r: { code: string; message: string; retryable: boolean; metadata?: unknown }): string {
  let body = r.message.trim().replace(/<\/verification_rejected/gi, "<\\/verification_rejected");
  if (r.metadata !== undefined && r.metadata !== null) body += `\nDetails: ${canonicalText(r.metadata)}`;
  const open = `<verification_rejected code="${escapeAttr(cut(r.code, 128))}" retryable="${r.retryable}">\n`;
  const close = `\n</verification_rejected>`;
  const room = FEEDBACK_LIMIT - open.length - close.length;
  if (body.length > room) body = cut(body, room - 1) + "…";
  return open + body + close;
}

/**
 * What the model reads before the result of a call a person edited when approving it: its own tool call
 * stays as it proposed it (the conversation only grows), and this note says what ran instead.
 */
export function editedNote(args: Record<string, unknown>): string {
  return `A person edited the arguments of this call before approving it; it ran with: ${jsonText(args)}\nResult: `;
}

const FINAL_STATES = new Set(["idle", "done", "failed"]);

const tool = (toolCallId: string, content: string): Message => ({ role: "tool", toolCallId, content });

/**
 * What the gate says about a candidate: the answer to its `agent_output`
 * call, or, for a candidate taken from a terminating tool result (whose call
 * already has its tool message), a system message naming that call.
 */
function aboutCandidate(c: NonNullable<VerificationState["candidate"]>, content: string): Message {
  if (c.from !== "terminate") return tool(c.toolCallId, content);
  return {
    role: "system",
    content: `The result of tool call ${c.toolCallId} ended the turn and was checked as its output:\n${content}`,
  };
}

/**
 * The messages one applied event adds to the conversation.
 * Long because it is one switch over the machine's events, one case each: the whole mapping from
 * transitions to messages reads in one place.
 */
export function messagesFor(
  event: AgentEvent,
  before: { value: string; context: AgentContext },
  after: { value: string; context: AgentContext },
): Message[] {
  switch (event.type) {
    case "TASK_STARTED":
      return [{ role: "user", content: inputText(event.input) }];
    case "MODEL_STEP": {
      const out: Message[] = [{
        role: "assistant",
        content: event.text ?? "",
        ...(event.toolCalls.length
          ? { toolCalls: event.toolCalls.map((c) => ({ id: c.id, name: c.name, args: c.args })) }
          : {}),
      }];
      const kind = classifyStep(event.toolCalls, before.context.config);
      if (kind === "verify" || kind === "submit") {
        const chosen = completionCall(event.toolCalls, before.context.config)!;
        for (const c of event.toolCalls) {
          if (c.id === chosen.id) {
            if (kind === "submit") out.push(tool(c.id, "Result submitted; the turn is complete."));
          } else out.push(tool(c.id, JSON.stringify({ error: { type: "not_executed", message: "The turn was being completed in this step" } })));
        }
      }
      if (kind === "remind") {
        out.push({
          role: "system",
          content: `You must end this turn by calling one of: ${requiredEnding(before.context.config).join(", ")}.`,
        });
      }
      return out;
    }
    case "TOOL_RESULT": {
      if (!(event.toolCallId in before.context.pending)) return [];
      const result = outcomeText(event.outcome);
      const out = [tool(event.toolCallId, event.editedArgs ? editedNote(event.editedArgs) + result : result)];
      // A terminating result ends the step (into done, or into verifying as the candidate).
      if (after.value === "done" || after.value === "verifying") {
        for (const id of Object.keys(before.context.pending)) {
          if (id !== event.toolCallId) {
            out.push(tool(id, JSON.stringify({ error: { type: "not_executed", message: "The turn was terminated by another tool" } })));
          }
        }
      }
      return out;
    }
    case "VERIFY_PASSED": {
      const c = before.context.verification.candidate;
      return c && c.from !== "terminate" ? [tool(c.toolCallId, "Output accepted.")] : [];
    }
    case "VERIFY_REJECTED": {
      // Into revising, the feedback message comes with FEEDBACK_APPENDED; a final rejection closes the call now.
      const c = before.context.verification.candidate;
      if (!c || after.value !== "failed") return [];
      return [aboutCandidate(c, feedbackText(event))];
    }
    case "VERIFY_ERROR": {
      const c = before.context.verification.candidate;
      if (!c || after.value !== "failed") return [];
      return [aboutCandidate(c, JSON.stringify({ error: { type: "verifier_error", message: event.message } }))];
    }
    case "FEEDBACK_APPENDED": {
      const c = before.context.verification.candidate;
      const r = before.context.verification.lastRejection;
      if (!c || !r) return [];
      return [aboutCandidate(c, feedbackText(r))];
    }
    case "CANCEL": {
      const ids = [...Object.keys(before.context.pending)];
      const c = before.context.verification.candidate;
      if (c && c.from !== "terminate" && (before.value === "verifying" || before.value === "revising")) ids.push(c.toolCallId);
      return ids.map((id) => tool(id, JSON.stringify({ error: { type: "cancelled", message: event.reason } })));
    }
    case "TURN_FAILED": {
      // Only calls of this turn are open (a turn that never started in the machine has none).
      if (before.context.turnId !== event.turnId || FINAL_STATES.has(before.value)) return [];
      const ids = [...Object.keys(before.context.pending)];
      const c = before.context.verification.candidate;
      if (c && (before.value === "verifying" || before.value === "revising")) ids.push(c.toolCallId);
      return ids.map((id) => tool(id, JSON.stringify({ error: { type: event.reason, message: event.message } })));
    }
    default:
      return [];
  }
}
