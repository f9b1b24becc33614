/**
 * Sends one machine event to a claim's actor and books what it changed into
 * the next commit (actors/claim/commit-buffer.ts): the `transition` event, the
 * messages the transition adds to the conversation (actors/conversation/transcript.ts),
 * the `task` event of a turn that ends, and the delegation notes.
 *
 * Invariants:
 * - An event the machine ignores changes nothing but an `event_ignored` event.
 * - The actor ends in the snapshot XState's `send` gives (machines/fast-step.ts
 *   takes a shorter way for the common transitions; tests/machine-fast-step.test.ts).
 * - Each transition is logged once, numbered in order within the claim
 *   (`seq`); replaying the logged machine events reproduces the snapshots. The
 *   logged `TASK_STARTED` carries no input: the store keeps a turn's input
 *   once (store/inputs.ts), and the turn's user message is stored as a
 *   reference to it.
 * - A message enters `history`, `usedIds` and the buffered messages together.
 * - A turn's end logs exactly one `task` event. A turn a model step finished
 *   and the spend limit then failed (`budget_exhausted`) logs the failure's
 *   `task` event in place of the finished one.
 * - A delegated turn's end and every child call no longer waited for (the
 *   turn ended, or the call timed out) are noted for after the commit
 *   (actors/delegation/delegation.ts), never acted on before it.
 * - After each applied event the claim runs under the definition the state
 *   names (actors/steps/handoff.ts): a handoff's target within its turn, the
 *   binding otherwise.
 */
import { deepFreeze } from "../../common/freeze.ts";
import { fastSend } from "../../machines/fast-step.ts";
import type { AgentContext, AgentEvent } from "../../machines/types.ts";
import { inputRefMessage } from "../../store/inputs.ts";
import { type ClaimContext, FINAL, snap } from "../claim/context.ts";
import { agentToolOf } from "../delegation/delegation.ts";
import { messagesFor } from "../conversation/transcript.ts";
import { followDefinition } from "./handoff.ts";

type Snap = { value: string; context: AgentContext };

/** Applies `ev`; false when the machine ignored it. */
export function applyEvent(ctx: ClaimContext, ev: AgentEvent): boolean {
  const buf = ctx.commit;
  const before = snap(ctx);
  // The short way through `send` (machines/fast-step.ts); an inspected actor gets XState's own, with its notifications.
  if (ctx.deps.inspect) ctx.actor.send(ev);
  else fastSend(ctx.actor, ev);
  const after = snap(ctx);
  if (before === after || (before.value === after.value && before.context === after.context)) {
    buf.emit("event_ignored", { event: ev.type, state: before.value });
    return false;
  }
  // A turn's input is stored once, by the store (store/inputs.ts): the logged TASK_STARTED names it by
  // its turn id, and the turn's user message is stored as a reference to it.
  const logged = ev.type === "TASK_STARTED" ? { ...ev, input: undefined } : ev;
  buf.emit("transition", { seq: ++ctx.transitionSeq, from: before.value, to: after.value, event: logged });
  const msgs = messagesFor(ev, before, after);
  for (const m of msgs) {
    deepFreeze(m);
    ctx.history.push(m);
    ctx.usedIds.add(m);
    buf.addMessage(ev.type === "TASK_STARTED" && m.role === "user" ? inputRefMessage(ev.turnId) : m);
  }
  noteDelegationChanges(ctx, ev, before, after);
  followDefinition(ctx);
  const budgetEnd = ev.type === "TURN_FAILED" && ev.reason === "budget_exhausted";
  if (FINAL.has(after.value) && (!FINAL.has(before.value) || budgetEnd)) {
    if (budgetEnd && FINAL.has(before.value)) {
      // The step that crossed the limit had just finished the turn: its `task` event is replaced.
      buf.withdrawTurnEnd(after.context.turnId!);
    }
    buf.endTurn({ turnId: after.context.turnId!, status: after.value, output: after.context.output, error: after.context.error });
    buf.emit("task", {
      turnId: after.context.turnId,
      status: after.value,
      deliverable: after.value === "done" ? after.context.output : null,
      error: after.context.error,
      usage: after.context.turnUsage,
    });
  }
  return true;
}

/** Notes children to cancel (calls no longer waited for) and links a delegated turn to its parent. */
function noteDelegationChanges(ctx: ClaimContext, ev: AgentEvent, before: Snap, after: Snap) {
  const { link } = ctx.delegation;
  if (ev.type === "TASK_STARTED" && link && ctx.claim.task?.turnId === ev.turnId) {
    ctx.commit.emit("delegated_by", { ...link, turnId: ev.turnId });
  }
  if (before.value !== "waiting-tools" || before.context.pending === after.context.pending) return;
  for (const [id, p] of Object.entries(before.context.pending)) {
    if (!p.external || id in after.context.pending || !agentToolOf(ctx.agent, p.name)) continue;
    const answered = ev.type === "TOOL_RESULT" && ev.toolCallId === id;
    const timedOut = answered && !ev.outcome.ok && ev.outcome.error.type === "timeout";
    if (answered && !timedOut) continue;
    ctx.commit.abandon({
      turnId: before.context.turnId!, toolCallId: id, toolName: p.name,
      reason: timedOut ? "the parent's call timed out" : `the parent's turn ended (${after.context.error?.reason ?? after.value})`,
    });
  }
}
