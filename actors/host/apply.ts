/**
 * Where what happened becomes the claim's state and the next commit's
 * writes. The steps (actors/steps/) and the spend guard return what happened
 * as records (actors/steps/happened.ts); the host hands them to `apply`,
 * which sends the machine events to the actor and books every write into
 * the commit (actors/claim/commit-buffer.ts). For one machine event that is:
 * the `transition` event, the messages the transition adds to the
 * conversation (actors/conversation/transcript.ts), the `task` event of a
 * turn that ends, and the delegation notes.
 *
 * Invariants:
 * - This module is the one caller of `applyEvent`, and, with the commit
 *   buffer, the only module that books a write into a commit
 *   (tests/repo/layers.test.ts pins both): a step never touches the actor or the
 *   commit, so what it decided can be read off its answer.
 * - Records are applied in their order; that order is the order of their
 *   writes in the commit. A `while` group is applied only while the machine
 *   is in its state when `apply` reaches it.
 * - An event the machine ignores changes nothing but an `event_ignored` event.
 * - The actor ends in the snapshot XState's `send` gives (machines/fast-step.ts
 *   takes a shorter way for the common transitions; tests/machines/machine-fast-step.test.ts).
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
 * - A new summary is the claim's memory from the moment it is applied, and
 *   rides with the next commit.
 */
import type { AnyAgent } from "../../agents/define.ts";
import { deepFreeze } from "../../common/freeze.ts";
import { fastSend } from "../../machines/fast-step.ts";
import type { AgentContext, AgentEvent } from "../../machines/types.ts";
import { inputRefMessage } from "../../store/inputs.ts";
import { type ClaimContext, FINAL, snap } from "../claim/context.ts";
import { agentToolOf } from "../delegation/delegation.ts";
import { messagesFor } from "../conversation/transcript.ts";
import { createToolRegistryView } from "../registry/claim-view.ts";
import { currentDefinitionName } from "../steps/handoff.ts";
import type { Happening } from "../steps/happened.ts";

type Snap = { value: string; context: AgentContext };

/** Applies what happened, in order (see the header). */
export async function apply(ctx: ClaimContext, happened: readonly Happening[]): Promise<void> {
  const buf = ctx.commit;
  for (const h of happened) {
    switch (h.kind) {
      case "event": applyEvent(ctx, h.event); break;
      case "log": buf.emit(h.type, h.data); break;
      case "log-all": buf.append(h.events); break;
      case "record-call": buf.recordCall(h.call, h.delegated); break;
      case "resolve-call": buf.resolveCall(h.result); break;
      case "summary":
        ctx.memory.summary = h.summary;
        buf.setSummary(h.summary);
        break;
      case "withdraw-calls": buf.withdrawToolCalls(); break;
      case "tool-used": await ctx.registry.record(h.name, buf.emit); break;
      case "ack-mail": buf.ackMail(h.seq); break;
      case "while":
        if (snap(ctx).value === h.state) await apply(ctx, h.then);
        break;
    }
  }
}

/**
 * The claim takes its turn over from version `from` (the binding's `upgradeFrom`, actors/host/versions.ts): the turn
 * runs under the binding's version from now on, recorded (`turn_upgraded`) and pinned with the next commit.
 */
export function applyUpgrade(ctx: ClaimContext, from: string): void {
  const turnId = ctx.claim.head.activeTurnId;
  if (turnId === null) return;
  const to = ctx.binding.version;
  ctx.commit.emit("turn_upgraded", { turnId, from, to });
  ctx.commit.pin(turnId, to);
  ctx.deps.logger.info("turn_upgraded", { agentId: ctx.agentId, agent: ctx.binding.name, turnId, from, to });
}

/** Applies `ev`; false when the machine ignored it. */
function applyEvent(ctx: ClaimContext, ev: AgentEvent): boolean {
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
  // The turn runs under this version to its end (store/port.ts invariant `turn-versions`): pinned with this commit.
  if (ev.type === "TASK_STARTED" && ev.version !== undefined) buf.pin(ev.turnId, ev.version);
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

/**
 * After an applied event: the claim runs under the definition the state names (a handoff switched it,
 * or a new turn went back to the binding). The tool registry view follows, for the `<known_tools>` block.
 */
function followDefinition(ctx: ClaimContext): void {
  const { value, context } = snap(ctx);
  const name = currentDefinitionName(ctx.binding.name, value, context);
  if (name === ctx.agent.name) return;
  const next: AnyAgent | undefined = name === ctx.binding.name ? ctx.binding : ctx.deps.agents.get(name);
  // Unknown here only when the handoff's answer found it: a definition map does not change during a claim.
  if (!next) return;
  const { store, clock, logger, registryWriter } = ctx.deps;
  ctx.agent = next;
  ctx.registry = createToolRegistryView({ store, agent: next, clock, logger, agentId: ctx.agentId, writer: registryWriter });
}
