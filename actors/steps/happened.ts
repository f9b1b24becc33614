/**
 * What a step returns: what happened, as records the host applies in order
 * (actors/host/apply.ts). A step reads its input and returns these; it never
 * sends an event to the actor or books a write itself.
 *
 * Invariants:
 * - Order is meaning: the host applies the records in the order given, and
 *   that is the order of their writes in the commit (an event for the log
 *   before the transition it explains, a call recorded before the step's
 *   transition).
 * - A `while` group is applied only while the machine is in its state when
 *   the host reaches it (a tool result after an earlier result of the same
 *   step ended the turn is logged, never applied).
 * - Records are plain data: a step's answer can be inspected by a test
 *   without a store, an actor or a commit.
 */
import type { NewEvent } from "../../common/events.ts";
import type { AgentEvent } from "../../machines/types.ts";
import type { ConversationSummary, RecordedCall, ResolvedCall } from "../claim/context.ts";

export type Happening =
  /** A machine event to apply (its transition, messages and turn end are booked by the host). */
  | { kind: "event"; event: AgentEvent }
  /** An event for the log, in the next commit. */
  | { kind: "log"; type: string; data: Record<string, unknown> }
  /** Events built elsewhere (the verifier gate's), in order. */
  | { kind: "log-all"; events: readonly NewEvent[] }
  /** A tool call to record (before it is dispatched); `delegated`: a call of an agent tool. */
  | { kind: "record-call"; call: RecordedCall; delegated: boolean }
  /** A recorded call's result. */
  | { kind: "resolve-call"; result: ResolvedCall }
  /** A new summary of the conversation (actors/conversation/memory.ts), stored with the next commit. */
  | { kind: "summary"; summary: ConversationSummary }
  /** The calls the next commit would record are withdrawn (a turn that crossed its spend limit). */
  | { kind: "withdraw-calls" }
  /** A successful call of tool `name`: the registry records it (actors/registry/claim-view.ts). */
  | { kind: "tool-used"; name: string }
  /** Mail acknowledged up to `seq`. */
  | { kind: "ack-mail"; seq: number }
  /** Applied only while the machine is in `state` when the host reaches the group. */
  | { kind: "while"; state: string; then: readonly Happening[] };

/** Records that are events for the log, built by `emit`-style code: push `log(type, data)`. */
export function log(type: string, data: Record<string, unknown>): Happening {
  return { kind: "log", type, data };
}
