/**
 * The records of one agent in the memory store, and the pure helpers that
 * read them (no writes: writes go through MemoryState's journal).
 */
import type { ConversationSummary, DeliveryRef, DeliveryResponse, TurnStatus } from "../port.ts";
import type { StoredEvent } from "../../common/events.ts";
import type { Message } from "../../common/message.ts";
import type { AgentHead, InboxTask, MailItem, ToolCallRecord } from "../types.ts";
import { checkDeliveryTarget, checkHolder, checkMessageId, StoreInputError } from "../keys.ts";
import type { CheckpointMark } from "../retention.ts";


/** An integer time or duration (ms), as the script adapters require. */
export function int(n: number, what: string): number {
  if (!Number.isSafeInteger(n)) throw new StoreInputError(`${what} must be an integer (ms), got ${n}`);
  return n;
}

export interface AgentRecords {
  head: AgentHead;
  tasks: InboxTask[];
  mail: MailItem[];
  mailSeq: number;
  messages: Message[];
  events: StoredEvent[];
  /** UTF-8 size of each event's JSON, for byte-bounded pages (same index as `events`). */
  eventBytes: number[];
  toolCalls: Map<string, ToolCallRecord>; // key: turnId + "\n" + toolCallId
  idempotency: Map<string, string>; // key -> turnId
  /** turnId -> where the turn is when it is not the active one: queued, done, failed, ended, cancelled. */
  turns: Map<string, Exclude<TurnStatus, "active">>;
  /** turnId -> the task's input: its one stored copy (store/inputs.ts). */
  inputs: Map<string, unknown>;
  verdicts: string[]; // verdict ids, append-only
  /** Claims of one turn that threw (invariant `turn-end-without-machine`); null when none counted. */
  claimFailures: { turnId: string | null; count: number } | null;
  /** Retention (invariant `retention`, store/retention.ts): checkpoints oldest first (the first is the base once trimmed). */
  ckpts: Array<{ mark: CheckpointMark; at: number; snapshot: unknown }>;
  /** Ended turns not yet dropped, in end order: the turn, its idempotency key, the message count at its end. */
  ended: Array<{ turnId: string; idem: string | null; msgEnd: number }>;
  /** Turns ended in all (dropped ones included). */
  endedTotal: number;
  /** UTF-8 bytes of every event appended by commits (a running total). */
  evBytes: number;
  summary: ConversationSummary | null;
}

/** The retention records of a new agent. */
export const freshRetention = () => ({ ckpts: [], ended: [], endedTotal: 0, evBytes: 0, summary: null });

export const callKey = (turnId: string, toolCallId: string) => `${turnId}\n${toolCallId}`;

/** UTF-8 length of a string (what Redis counts for the same JSON text), without encoding it. */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2; // a surrogate pair: 4 bytes for 2 units
      i++;
    } else n += 2;
  }
  return n;
}

/** One signed message's transport dedup record (`holder` "" when nobody holds it). */
export interface DeliveryRecord {
  until: number;
  holdUntil: number;
  holder: string;
  target: string;
  response: DeliveryResponse | null;
}

/** The checked identity of a delivery request (the same checks as the Lua store's keys and arguments). */
export function deliveryRef(req: DeliveryRef): DeliveryRef {
  return { messageId: checkMessageId(req.messageId), target: checkDeliveryTarget(req.target), holder: checkHolder(req.holder), now: int(req.now, "now") };
}

export const leaseHeld = (h: AgentHead, now: number) => h.leaseOwner !== null && h.leaseUntil > now;

/** A queued task may start at `now`: it has no `runAt`, or that time has come (invariant `delayed-tasks`). */
export const taskDue = (t: InboxTask, now: number) => t.runAt === undefined || t.runAt <= now;

/** The first queued task, when no turn is active and it is due: what a claim takes. */
export const dueTask = (a: AgentRecords, now: number): InboxTask | null =>
  a.head.activeTurnId === null && a.tasks.length > 0 && taskDue(a.tasks[0], now) ? a.tasks[0] : null;

/**
 * Where a task joining the queue at `at` goes (invariant `delayed-tasks`): after every
 * queued task that has joined by then, passing over from the tail only delayed tasks
 * whose `runAt` is later. Mirrors queue_task in store/lua/includes/queue.lua.
 */
export function queueIndex(tasks: readonly InboxTask[], at: number): number {
  let i = tasks.length;
  while (i > 0 && tasks[i - 1].runAt !== undefined && tasks[i - 1].runAt! > at) i--;
  return i;
}

/** The delayed tasks queued at `now` (runAt after now): the queue's tail, in join order. Mirrors delayed_count in store/lua/includes/queue.lua. */
export function delayedCount(tasks: readonly InboxTask[], now: number): number {
  let n = 0;
  while (n < tasks.length && tasks[tasks.length - 1 - n].runAt !== undefined && tasks[tasks.length - 1 - n].runAt! > now) n++;
  return n;
}

/** What a claim would take now; mirrors store/lua/includes/claim.lua. */
export const claimable = (a: AgentRecords, now: number) =>
  a.mail.length > 0 ||
  dueTask(a, now) !== null ||
  (a.head.runnableAt !== null && a.head.runnableAt <= now);

/**
 * The agent's bell after a write that leaves it unleased (invariant `delayed-tasks`):
 * `now` when claimable, else the earliest of `runnableAt` and the first queued task's
 * `runAt` (no turn active), else none. Mirrors rest_bell in store/lua/includes/queue.lua.
 */
export function bellAt(a: AgentRecords, now: number): number | null {
  if (claimable(a, now)) return now;
  const h = a.head;
  const next = h.activeTurnId === null && a.tasks.length > 0 ? (a.tasks[0].runAt ?? null) : null;
  if (next === null) return h.runnableAt;
  return h.runnableAt === null ? next : Math.min(next, h.runnableAt);
}

/** Where a turn is; null when unknown. Mirrors store/lua/includes/turns.lua. */
export const turnStatus = (a: AgentRecords, turnId: string): TurnStatus | null => {
  if (a.head.activeTurnId === turnId) return "active";
  const st = a.turns.get(turnId);
  // Listed as queued but no longer in the inbox: only a claim takes a task out, so it ran.
  if (st === "queued" && !a.tasks.some((t) => t.turnId === turnId)) return "ended";
  return st ?? null;
};

/** The empty records of a new agent (its first task, or an import that fills some in). */
export function freshAgent(agentId: string, agentName: string, workerTarget: string, now: number): AgentRecords {
  return {
    head: {
      agentId,
      agentName,
      workerTarget,
      createdAt: now,
      updatedAt: now,
      activeTurnId: null,
      currentTask: null,
      epoch: 0,
      version: 0,
      snapshot: null,
      state: "idle",
      leaseOwner: null,
      leaseUntil: 0,
      runnableAt: null,
      pendingTasks: 0,
      pendingMail: 0,
      messageCount: 0,
      lastEventId: 0,
      eventsTrimmedThrough: 0,
      messagesTrimmedThrough: 0,
    },
    tasks: [],
    mail: [],
    mailSeq: 0,
    messages: [],
    events: [],
    eventBytes: [],
    toolCalls: new Map(),
    idempotency: new Map(),
    turns: new Map(),
    inputs: new Map(),
    verdicts: [],
    claimFailures: null,
    ...freshRetention(),
  };
}

/** The agent's lane ("" : the default lane) and priority (seconds): its active turn's task's, else its first queued task's (store/port.ts invariants `fair-lanes`, `priorities`). */
export function laneOf(a: AgentRecords): { lane: string; prio: number } {
  const t = a.head.currentTask ?? a.tasks[0] ?? null;
  return { lane: t?.concurrencyKey ?? "", prio: t?.priority ?? 0 };
}
