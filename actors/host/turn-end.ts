/**
 * The writes that end a turn from outside the normal claim: the claims of
 * the turn kept throwing (`claim_error`, actors/pool/pool.ts) or an operator
 * reset the agent (`reset`, routes/agents.ts). The store applies them with
 * `recordClaimFailure` / `resetTurn` (store/port.ts, invariant `turn-end-without-machine`).
 *
 * Invariant: `turnEnd` never throws and does not run the code path that
 * failed. It restores the snapshot and sends one `TURN_FAILED` event (the
 * machine accepts it in every state), so the event log still replays to the
 * stored snapshot. When the snapshot cannot be restored, the turn fails from
 * the machine's initial snapshot instead (the agent's usage totals start
 * over) and the events say so (`snapshotReset: true`). A reset's transition
 * carries who asked for it (`by`, common/by.ts).
 */
import { type By, byField } from "../../common/by.ts";
import { createActor } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import { checkSnapshot, initialPersisted, type PersistedSnapshot, persistedOf } from "../../machines/persist.ts";
import type { AgentContext, AgentEvent } from "../../machines/types.ts";
import type { TurnEnd } from "../../store/port.ts";
import type { Message } from "../../common/message.ts";
import type { AgentHead } from "../../store/types.ts";
import { messagesFor } from "../conversation/transcript.ts";

/** Longest error message kept in events and context. */
export const TURN_END_MESSAGE_LIMIT = 500;

type View = { value: string; context: AgentContext };

function send(persisted: PersistedSnapshot, ev: AgentEvent): { before: View; after: View; snapshot: PersistedSnapshot } {
  const actor = createActor(agentMachine, { snapshot: persisted as never }).start();
  try {
    const before = actor.getSnapshot() as unknown as View;
    actor.send(ev);
    const after = actor.getSnapshot() as unknown as View;
    return { before, after, snapshot: persistedOf(actor.getSnapshot()) };
  } finally {
    actor.stop();
  }
}

/**
 * @example
 * const end = turnEnd(head, "claim_error", "RangeError: Maximum call stack size exceeded", clock.now());
 * await store.recordClaimFailure({ ..., end });
 */
export function turnEnd(head: AgentHead, reason: "claim_error" | "reset", message: string, now: number, by?: By): TurnEnd {
  const turnId = head.activeTurnId;
  if (turnId === null) return { snapshot: head.snapshot, state: head.state, events: [], messages: [] };
  const text = message.length > TURN_END_MESSAGE_LIMIT ? `${message.slice(0, TURN_END_MESSAGE_LIMIT - 1)}…` : message;
  const ev: AgentEvent = { type: "TURN_FAILED", at: now, turnId, reason, message: text };
  let r: ReturnType<typeof send>;
  let snapshotReset = false;
  try {
    r = send(head.snapshot ? checkSnapshot(head.snapshot) : initialPersisted(), ev);
  } catch {
    snapshotReset = true;
    r = send(initialPersisted(), ev);
  }
  let messages: Message[] = [];
  try {
    messages = messagesFor(ev, r.before, r.after);
  } catch {
    // The open calls stay without an answer; the next model call sees them as not executed.
  }
  const ctx = r.after.context;
  return {
    snapshot: r.snapshot,
    state: r.after.value,
    messages,
    events: [
      { type: "transition", data: { seq: 1, from: r.before.value, to: r.after.value, event: ev, ...(snapshotReset ? { snapshotReset } : {}), ...byField(by) } },
      { type: "task", data: { turnId, status: "failed", deliverable: null, error: ctx.error, usage: ctx.turnUsage } },
    ],
  };
}
