/**
 * Time travel: an agent as it was right after one event of its log, rebuilt
 * by replaying the log's `transition` events through the pure machine and
 * the pure transcript (actors/conversation/transcript.ts), exactly as the host applied
 * them. Nothing is read but the event log, the turns' inputs (a
 * `TASK_STARTED` names its input by turn id, store/inputs.ts) and, for a
 * fork, the messages it was created with.
 *
 * Invariants (tests/host/time-travel-property.test.ts):
 * - The snapshot rebuilt at the last event of a commit equals the snapshot
 *   that commit stored; at the log's last event it equals the head's.
 * - The messages rebuilt at that event equal the stored conversation's
 *   first `messages.length` entries.
 * - Each replayed transition lands in the state its event names (`to`);
 *   otherwise the log cannot be replayed and `HistoryDivergedError` says
 *   where.
 *
 * A fork's log starts with `forked_from`, which carries the snapshot and
 * the number of messages it started from: the replay starts there.
 *
 * A log trimmed by retention (store/port.ts invariant `retention`) starts after its
 * base checkpoint: the replay starts from the checkpoint's snapshot and the
 * messages stored before its message index, so every event after the base
 * can still be shown; an event at or before the base answers
 * `EventTrimmedError`. There `messages` starts at `messagesFrom`, the
 * logical index of the first message the store still keeps.
 */
import { createActor } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import { checkSnapshot, initialPersisted, type PersistedSnapshot } from "../../machines/persist.ts";
import type { AgentContext, AgentEvent } from "../../machines/types.ts";
import type { StoredEvent } from "../../common/events.ts";
import type { Message } from "../../common/message.ts";
import { jsonClone } from "../../common/json.ts";
import type { Checkpoint, Store } from "../../store/port.ts";
import { messagesFor } from "../conversation/transcript.ts";
import { EventTrimmedError, HistoryDivergedError } from "../../errors/history.ts";

export { EventTrimmedError, HistoryDivergedError };

export interface HistoryPoint {
  /** The event the agent is shown after. */
  event: StoredEvent;
  /** The machine state value after that event. */
  state: string;
  context: AgentContext;
  /** What a commit right after this event stores as the head's snapshot. */
  snapshot: PersistedSnapshot;
  /** The conversation after this event (user inputs filled in), from message `messagesFrom` on. */
  messages: Message[];
  /** Logical index of `messages[0]`: 0, or where a trimmed conversation starts. */
  messagesFrom: number;
  /** The turn active after this event, when it is in one. */
  activeTurnId: string | null;
}

/** Page size of the log reads of a replay. */
const PAGE = 500;
const IN_TURN = new Set(["running", "waiting-tools", "verifying", "revising"]);

/** Reads the stored events up to `through` (from 1, or from the first one retention kept), in pages. */
export async function readEventsThrough(store: Store, agentId: string, through: number): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  let after = 0;
  while (after < through) {
    const page = await store.readEvents(agentId, after, Math.min(PAGE, through - after));
    if (page.length === 0) break;
    // A trimmed log starts later than `after + 1`: the page may reach past `through`.
    for (const e of page) if (e.id <= through) out.push(e);
    after = page[page.length - 1].id;
  }
  return out;
}

/**
 * A replayer over a list of events: `step` applies one, `point` answers the
 * agent after the last one applied. `inputOf` answers a turn's input.
 */
export function createReplayer(opts: {
  inputOf: (turnId: string) => Promise<unknown>;
  /** Messages a fork was created with (the first `n` of its stored conversation). */
  forkMessages: (n: number) => Promise<Message[]>;
  /** Start from a checkpoint instead of the initial snapshot (a trimmed log). */
  base?: { snapshot: PersistedSnapshot; messages: Message[]; messagesFrom: number };
}) {
  let actor = createActor(agentMachine, { snapshot: (opts.base?.snapshot ?? initialPersisted()) as never }).start();
  let messages: Message[] = opts.base ? [...opts.base.messages] : [];
  let messagesFrom = opts.base?.messagesFrom ?? 0;
  let last: StoredEvent | null = null;
  const snap = () => actor.getSnapshot() as unknown as { value: string; context: AgentContext };

  return {
    async step(e: StoredEvent): Promise<void> {
      last = e;
      if (e.type === "forked_from") {
        const d = e.data as { snapshot?: unknown; messageCount?: number };
        let persisted: PersistedSnapshot;
        try {
          persisted = checkSnapshot(d.snapshot);
        } catch (err) {
          throw new HistoryDivergedError(e.id, `Event ${e.id} (forked_from) holds no usable snapshot: ${(err as Error).message}`);
        }
        actor.stop();
        actor = createActor(agentMachine, { snapshot: persisted as never }).start();
        messages = await opts.forkMessages(typeof d.messageCount === "number" ? d.messageCount : 0);
        messagesFrom = 0;
        return;
      }
      if (e.type !== "transition") return;
      const d = e.data as { from?: string; to?: string; event?: AgentEvent; snapshotReset?: boolean };
      if (!d.event || typeof d.event !== "object") throw new HistoryDivergedError(e.id, `Event ${e.id} (transition) carries no machine event`);
      let ev = d.event;
      if (ev.type === "TASK_STARTED") ev = { ...ev, input: await opts.inputOf(ev.turnId) };
      if (d.snapshotReset === true) {
        // A turn ended from outside on a snapshot that could not be restored starts from the initial one (actors/host/turn-end.ts).
        actor.stop();
        actor = createActor(agentMachine, { snapshot: initialPersisted() as never }).start();
      }
      const before = snap();
      actor.send(ev);
      const after = snap();
      if (after.value !== d.to) {
        throw new HistoryDivergedError(
          e.id,
          `Event ${e.id}: ${ev.type} led from ${before.value} to ${after.value} on replay, the log says ${String(d.to)}`,
        );
      }
      messages.push(...messagesFor(ev, before, after));
    },
    point(): HistoryPoint {
      if (!last) throw new Error("no event replayed");
      const s = snap();
      const snapshot = jsonClone(actor.getPersistedSnapshot()) as unknown as PersistedSnapshot;
      return {
        event: last,
        state: s.value,
        context: jsonClone(s.context) as AgentContext,
        snapshot,
        messages: jsonClone(messages) as Message[],
        messagesFrom,
        activeTurnId: IN_TURN.has(s.value) ? s.context.turnId : null,
      };
    },
    stop() {
      actor.stop();
    },
  };
}

/** Inputs and fork messages of one stored agent, for a replayer. */
export function storeSources(store: Store, agentId: string) {
  const inputs = new Map<string, unknown>();
  return {
    async inputOf(turnId: string): Promise<unknown> {
      if (!inputs.has(turnId)) inputs.set(turnId, (await store.getTurn(agentId, turnId))?.input ?? null);
      return inputs.get(turnId);
    },
    async forkMessages(n: number): Promise<Message[]> {
      return n > 0 ? (await store.readMessages(agentId)).slice(0, n) : [];
    },
  };
}

/**
 * The agent after event `eventId`; null when the agent has no such event.
 * Throws HistoryDivergedError when the log cannot be replayed.
 */
export async function historyAt(store: Store, agentId: string, eventId: number): Promise<HistoryPoint | null> {
  return (await replayThrough(store, agentId, eventId))?.point ?? null;
}

/** historyAt, also answering the events it replayed (1..eventId). */
export async function replayThrough(
  store: Store,
  agentId: string,
  eventId: number,
): Promise<{ point: HistoryPoint; events: StoredEvent[] } | null> {
  if (!Number.isSafeInteger(eventId) || eventId < 1) return null;
  // A trim between reading the base and reading the log moves the base: read both again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const cp = await store.readCheckpoint(agentId);
    const from = cp?.eventId ?? 0;
    if (eventId <= from) throw new EventTrimmedError(eventId, from, agentId);
    const events = await readEventsThrough(store, agentId, eventId);
    if (events.length === 0 || events[events.length - 1].id !== eventId) return null;
    if (events[0].id !== from + 1) continue;
    return await replayEvents(store, agentId, events, cp ? await baseOf(store, agentId, cp) : undefined);
  }
  const cp = await store.readCheckpoint(agentId);
  throw new EventTrimmedError(eventId, cp?.eventId ?? 0, agentId);
}

/** The replay base of a checkpoint: its snapshot and the messages stored before its message index. */
async function baseOf(store: Store, agentId: string, cp: Checkpoint) {
  let snapshot: PersistedSnapshot;
  try {
    snapshot = checkSnapshot(cp.snapshot);
  } catch (err) {
    throw new HistoryDivergedError(cp.eventId, `The checkpoint at event ${cp.eventId} holds no usable snapshot: ${(err as Error).message}`);
  }
  const conv = await store.readConversation(agentId);
  const firstIndex = conv?.firstIndex ?? 0;
  const messages = (conv?.messages ?? []).slice(0, Math.max(0, cp.messageIndex - firstIndex));
  return { snapshot, messages, messagesFrom: firstIndex };
}

async function replayEvents(
  store: Store,
  agentId: string,
  events: StoredEvent[],
  base: Awaited<ReturnType<typeof baseOf>> | undefined,
): Promise<{ point: HistoryPoint; events: StoredEvent[] }> {
  const r = createReplayer({ ...storeSources(store, agentId), ...(base ? { base } : {}) });
  try {
    for (const e of events) await r.step(e);
    return { point: r.point(), events };
  } finally {
    r.stop();
  }
}
