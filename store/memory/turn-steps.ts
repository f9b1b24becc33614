/**
 * The steps several operations of the memory store share: retention after a
 * turn ends, ending a turn without the machine, and the claim (also taken by
 * a chaining commit). Each takes the store's MemoryState and writes through
 * its journal.
 */
import type { ClaimResult, ConcurrencyLimits, PreviousLease, RetentionLimits, TurnEnd } from "../port.ts";
import type { MailItem } from "../types.ts";
import { planRetention } from "../retention.ts";
import { type AgentRecords, bellAt, claimable, dueTask, leaseHeld } from "./records.ts";
import type { MemoryState } from "./state.ts";
import { laneFull, laneOf, parkLane, releaseRun, runUnder } from "./lanes.ts";

/**
 * Applies the retention rules (store/retention.ts) after a commit that
 * ended a turn; mirrors store/lua/includes/retention.lua. Journaled.
 */
export function retain(s: MemoryState, a: AgentRecords, limits: RetentionLimits, snapshot: unknown, now: number) {
  const { copy, w } = s;
  const h = a.head;
  const plan = planRetention(limits, {
    marks: a.ckpts.map((c) => c.mark), trimmedThrough: h.eventsTrimmedThrough, last: h.lastEventId,
    bytes: a.evBytes, ended: a.endedTotal, endedBase: a.endedTotal - a.ended.length,
  });
  if (plan.checkpoint) {
    const mark = { eventId: h.lastEventId, bytes: a.evBytes, ended: a.endedTotal, messageIndex: h.messageCount };
    w.push(a.ckpts, { mark, at: now, snapshot: copy(snapshot) });
  }
  if (plan.cutAt >= 0) {
    const base = a.ckpts[plan.cutAt].mark.eventId;
    const drop = base - h.eventsTrimmedThrough;
    w.set(a, "events", a.events.slice(drop));
    w.set(a, "eventBytes", a.eventBytes.slice(drop));
    w.set(a, "ckpts", a.ckpts.slice(plan.cutAt));
    w.set(h, "eventsTrimmedThrough", base);
  }
  if (plan.dropTurnsThrough > 0) {
    const n = plan.dropTurnsThrough - (a.endedTotal - a.ended.length);
    const gone = a.ended.slice(0, n);
    const ids = new Set(gone.map((t) => t.turnId));
    const keys = new Set(gone.filter((t) => t.idem !== null && a.idempotency.get(t.idem) === t.turnId).map((t) => t.idem));
    // Whole maps replaced (journaled as one write each): an undo puts back the old map, order included.
    const without = <V>(m: Map<string, V>, drop: (k: string, v: V) => boolean) => new Map([...m].filter(([k, v]) => !drop(k, v)));
    w.set(a, "turns", without(a.turns, (k) => ids.has(k)));
    w.set(a, "inputs", without(a.inputs, (k) => ids.has(k)));
    w.set(a, "toolCalls", without(a.toolCalls, (_k, rec) => ids.has(rec.turnId)));
    w.set(a, "idempotency", without(a.idempotency, (k) => keys.has(k)));
    w.set(a, "ended", a.ended.slice(n));
    const msgEnd = Math.max(...gone.map((t) => t.msgEnd));
    if (msgEnd > h.messagesTrimmedThrough) {
      w.set(a, "messages", a.messages.slice(msgEnd - h.messagesTrimmedThrough));
      w.set(h, "messagesTrimmedThrough", msgEnd);
    }
  }
}

/**
 * Ends the active turn with `end` (invariant `turn-end-without-machine`); mirrors
 * store/lua/includes/end_turn.lua. Copies everything first, so a value that
 * cannot be copied throws before anything is written; the returned
 * function does the (journaled) writes and answers the new version.
 * `before`: the caller's own events, logged ahead of the end's.
 */
export function prepareEndTurn(
  s: MemoryState,
  a: AgentRecords,
  end: TurnEnd,
  now: number,
  before: Array<{ type: string; data: Record<string, unknown> }>,
): () => number {
  const { deadlines, copy, w, eventOf, appendEvents, restBell } = s;
  const turnId = a.head.activeTurnId;
  const snapshot = copy(end.snapshot);
  const messages = end.messages.map((m) => copy(m));
  const events = [...before, ...end.events].map((e, i) => eventOf(a, i + 1, turnId, String(e.type), copy(e.data), now));
  const state = String(end.state);
  return () => {
    const h = a.head;
    for (const m of messages) w.push(a.messages, m);
    appendEvents(a, events);
    if (turnId !== null) {
      for (const rec of a.toolCalls.values()) {
        if (rec.turnId === turnId && rec.status === "pending") w.mapDelete(deadlines, `${h.agentId}\n${rec.turnId}\n${rec.toolCallId}`);
      }
      w.mapSet(a.turns, turnId, state === "done" || state === "failed" ? state : "ended");
      w.push(a.ended, { turnId, idem: h.currentTask?.idempotencyKey ?? null, msgEnd: h.messagesTrimmedThrough + a.messages.length });
      w.set(a, "endedTotal", a.endedTotal + 1);
    }
    w.set(a, "mail", []);
    w.set(a, "claimFailures", null);
    w.set(h, "snapshot", snapshot);
    w.set(h, "state", state);
    w.set(h, "version", h.version + 1);
    w.set(h, "updatedAt", now);
    w.set(h, "activeTurnId", null);
    w.set(h, "currentTask", null);
    w.set(h, "messageCount", h.messagesTrimmedThrough + a.messages.length);
    w.set(h, "pendingMail", 0);
    w.set(h, "leaseOwner", null);
    w.set(h, "leaseUntil", 0);
    w.set(h, "runnableAt", null);
    // The ended turn's slot frees (invariant `concurrency-keys`).
    releaseRun(s, a, now);
    // The tasks behind the turn proceed (a delayed one when it comes due: invariant `delayed-tasks`).
    restBell(a, now);
    return h.version;
  };
}

/** What a claim takes: its lease, the time limits, and the concurrency limits it keeps (invariant `concurrency-keys`). */
export interface ClaimAsk {
  workerId: string;
  leaseMs: number;
  now: number;
  concurrencyLimits?: ConcurrencyLimits;
}

export function doClaim(s: MemoryState, a: AgentRecords, req: ClaimAsk): ClaimResult {
  const r = claimStep(s, a, req);
  return r.status === "limited" ? { status: "empty", agentId: a.head.agentId } : r;
}

/** A claim of one agent; `limited` when its key is at its limit (its lane parked, nothing else written). */
export function claimStep(s: MemoryState, a: AgentRecords, req: ClaimAsk): ClaimResult | { status: "limited" } {
  const { copy, setReady } = s;
  const h = a.head;
  if (leaseHeld(h, req.now)) return { status: "busy", agentId: h.agentId, leaseUntil: h.leaseUntil };
  if (!claimable(a, req.now)) {
    // A bell with nothing behind it: forget the bell, keep a future wakeup (a delayed task's included).
    setReady(a, bellAt(a, req.now));
    return { status: "empty", agentId: h.agentId };
  }
  const { lane } = laneOf(a);
  const full = laneFull(s, lane, req.concurrencyLimits, req.now);
  if (full !== null) {
    parkLane(s, h.workerTarget, lane, full);
    return { status: "limited" };
  }
  const previousLease = h.leaseOwner === null ? null : { workerId: h.leaseOwner, leaseUntil: h.leaseUntil, updatedAt: h.updatedAt };
  return takeLease(s, a, req, previousLease, copy(a.mail));
}

/**
 * The writes of a claim (shared with a chaining commit, invariant `turn-chaining`): the next task if no turn is active
 * (its turn's state `running`, invariant `turn-start`), a new epoch, the lease.
 */
export function takeLease(
  s: MemoryState,
  a: AgentRecords,
  req: { workerId: string; leaseMs: number; now: number },
  previousLease: PreviousLease | null,
  mail: MailItem[],
): Extract<ClaimResult, { status: "claimed" }> {
  const { copy, w, setReady } = s;
  const h = a.head;
  const next = dueTask(a, req.now);
  if (next !== null) {
    w.set(a, "tasks", a.tasks.slice(1));
    w.set(h, "activeTurnId", next.turnId);
    w.set(h, "currentTask", next);
    w.set(h, "pendingTasks", a.tasks.length);
    w.set(h, "runnableAt", req.now);
    // The turn reads `running` from its claim on; the rest of its start rides with the first commit (invariant `turn-start`).
    w.set(h, "state", "running");
  }
  w.set(h, "epoch", h.epoch + 1);
  w.set(h, "leaseOwner", req.workerId);
  w.set(h, "leaseUntil", req.now + req.leaseMs);
  w.set(h, "updatedAt", req.now);
  setReady(a, h.leaseUntil);
  runUnder(s, a, laneOf(a).lane, h.leaseUntil);
  const task = h.currentTask === null ? null : { ...copy(h.currentTask), input: copy(a.inputs.get(h.currentTask.turnId)) };
  return {
    status: "claimed",
    agentId: h.agentId,
    epoch: h.epoch,
    head: copy(h),
    task,
    mail,
    previousLease,
  };
}
