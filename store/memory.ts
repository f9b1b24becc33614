/**
 * memoryStore(): the embedded default store. Each method does all its checks
 * and writes synchronously (no await in between), which makes it as atomic as
 * a Lua script on one Redis. Records are deep-copied in and out so callers
 * can never mutate stored state. It implements the contract of store/port.ts
 * independently of the Lua scripts in store/lua/ (used by the Redis
 * adapters); tests/store-conformance.ts runs the same cases on both, which is
 * what keeps them alike.
 *
 * All or nothing (store/port.ts, invariant 10): every operation first copies
 * and checks its inputs (a value that cannot be copied, a nesting too deep for
 * JSON, throws here, before anything changed), then writes. Every write goes
 * through the journal of the running operation (`w.*`), and an exception at
 * any point, a copy or a write, undoes the journal in reverse order, so the
 * store is left exactly as it was and event ids stay dense. `faults` (tests
 * only) is called before every copy and every write, so a test can throw at
 * each step of each operation and compare the whole state before and after
 * (`memoryStoreState`).
 */
import type {
  Checkpoint,
  ClaimDeliveryRequest,
  ClaimDeliveryResult,
  ConversationSummary,
  RetentionLimits,
  DeliveryRef,
  DeliveryResponse,
  RecordDeliveryRequest,
  RenewDeliveryRequest,
  SettleDeliveryResult,
  RateLimitRequest,
  RateLimitResult,
  TargetLeaseRequest,
  TargetLeaseResult,
  AgentIndexEntry,
  CreateForkRequest,
  CreateForkResult,
  ListAgentsRequest,
  RecordForkRequest,
  RecordToolMethodRequest,
  RecordToolMethodResult,
  CancelRequest,
  CancelResult,
  CancelTaskRequest,
  CancelTaskResult,
  ClaimFailureRequest,
  ClaimFailureResult,
  ClaimNextRequest,
  ClaimRequest,
  ClaimResult,
  CommitRequest,
  CommitResult,
  DeliverToolResultRequest,
  DeliverToolResultResult,
  EnqueueTaskRequest,
  EnqueueTaskResult,
  PreviousLease,
  RenewRequest,
  ResetTurnRequest,
  ResetTurnResult,
  SkipDueToolCallRequest,
  Store,
  TurnEnd,
  TurnStatus,
  VerdictFilter,
  VerdictPut,
} from "./port.ts";
import { answerResolved } from "./redelivery.ts";
import type { StoredEvent } from "../common/events.ts";
import type { Message } from "../common/message.ts";
import { normalizeRecord } from "./spelling.ts";
import type { AgentHead, InboxTask, MailItem, ToolCallRecord } from "./types.ts";
import { inputBytes, inputText } from "./inputs.ts";
import {  checkAgentId, checkAgentName, checkDeliveryTarget, checkHolder, checkMessageId, checkTarget, checkToolName, StoreInputError, toolCalls  } from "./keys.ts";
import { gcraArgs } from "./rate-limit.ts";
import { processLive } from "./live.ts";

/** An integer time or duration (ms), as the script adapters require. */
function int(n: number, what: string): number {
  if (!Number.isSafeInteger(n)) throw new StoreInputError(`${what} must be an integer (ms), got ${n}`);
  return n;
}
import { notApplied } from "../common/contract-validation.ts";
import { loadToolRoleEntry, methodForm, type ToolRoleEntry } from "../common/tool-registry.ts";
import { type CheckpointMark, planRetention, resolveRetention } from "./retention.ts";

interface AgentRecords {
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
  /** Claims of one turn that threw (invariant 12); null when none counted. */
  claimFailures: { turnId: string | null; count: number } | null;
  /** Retention (invariant 18, store/retention.ts): checkpoints oldest first (the first is the base once trimmed). */
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
const freshRetention = () => ({ ckpts: [], ended: [], endedTotal: 0, evBytes: 0, summary: null });

export interface MemoryStoreOptions {
  /**
   * Tests only: called with the name of each step (`copy`, `write`) before it
   * runs; a throw there aborts the operation, which must then leave the store
   * as it was.
   */
  faults?: (step: string) => void;
}

const callKey = (turnId: string, toolCallId: string) => `${turnId}\n${toolCallId}`;
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

/**
 * Every stored record of one memory store as plain JSON data (maps become
 * arrays of entries in insertion order), for tests that compare the whole
 * stored state before and after an operation. Not part of the Store port; no
 * other code reads it.
 */
export interface MemoryStoreState {
  agents: Array<[agentId: string, records: Record<string, unknown> & { verdicts: string[] }]>;
  /** workerTarget -> [agentId, ready score] entries. */
  ready: Array<[target: string, entries: Array<[agentId: string, score: number]>]>;
  /** ["agentId\nturnId\ntoolCallId", deadline] entries. */
  deadlines: Array<[member: string, deadline: number]>;
  verdicts: Array<[verdictId: string, record: { agentId: string; turnId: string; status: string; json: string }]>;
  /** The tool registry: role -> entry, and `<role>\n<form>` -> method. */
  tools: Array<[role: string, entry: unknown]>;
  toolForms: Array<[key: string, method: string]>;
  /** Deletion markers (store/port.ts invariant 22): agentId -> deletion time (ms). */
  deleted: Array<[agentId: string, at: number]>;
}

const importers = new WeakMap<Store, (rec: ImportedAgent) => "imported" | "exists">();

/** One agent's records as a replay bundle carries them (routes/replay-bundle.ts). */
export interface ImportedAgent {
  head: AgentHead;
  events: StoredEvent[];
  /** The conversation with inputs filled in (stored as given). */
  messages: Message[];
  /** turnId -> the task's input. */
  inputs: Record<string, unknown>;
  toolCalls: ToolCallRecord[];
  verdicts: Array<{ verdictId: string; turnId: string; status: string; json: string }>;
  /** turnId -> status, for turns that are not active. */
  turns: Record<string, Exclude<TurnStatus, "active">>;
  /** A trimmed agent's base checkpoint: `events` start right after it. */
  checkpoint?: Checkpoint;
  /** Index of `messages[0]` in the whole conversation (a trimmed agent). */
  messagesFrom?: number;
}

/** One signed message's transport dedup record (`holder` "" when nobody holds it). */
interface DeliveryRecord {
  until: number;
  holdUntil: number;
  holder: string;
  target: string;
  response: DeliveryResponse | null;
}

/** The checked identity of a delivery request (the same checks as the Lua store's keys and arguments). */
function deliveryRef(req: DeliveryRef): DeliveryRef {
  return { messageId: checkMessageId(req.messageId), target: checkDeliveryTarget(req.target), holder: checkHolder(req.holder), now: int(req.now, "now") };
}

/**
 * Puts an agent's records into a memory store as they are (offline
 * debugging of an exported run): no lease, not due, nothing queued. Answers
 * `exists` and changes nothing when the id is taken.
 */
export function memoryStoreImport(store: Store, rec: ImportedAgent): "imported" | "exists" {
  const f = importers.get(store);
  if (!f) throw new Error("not a memory store");
  return f(rec);
}

/**
 * The key under which a memory store carries its state function: a symbol (no
 * method of the Store port) and enumerable, so a wrapper built with
 * `{ ...store }` keeps it.
 */
const STATE = Symbol.for("gatehouse.memoryStore.state");

/** A deep copy of the whole raw state of a memory store (or of a `{ ...store }` wrapper of one). */
export function memoryStoreState(store: Store): MemoryStoreState {
  const f = (store as unknown as Record<symbol, (() => MemoryStoreState) | undefined>)[STATE];
  if (typeof f !== "function") throw new TypeError(`memoryStoreState needs a memoryStore(), got a "${store.kind}" store`);
  return JSON.parse(JSON.stringify(f()));
}

/** What a memory store shows of itself beyond the port, for tests. */
export interface MemoryStoreInternals {
  /** Idempotency entries kept for an agent (store/port.ts invariant 13). */
  idempotencyEntries(agentId: string): number;
  /** Stores a tool registry entry as given (tests of entries written by older versions). */
  putRawToolEntry(role: string, entry: unknown): void;
}

const internals = new WeakMap<Store, MemoryStoreInternals>();

/** The internals of a memory store (undefined for any other store). */
export function memoryStoreInternals(store: Store): MemoryStoreInternals | undefined {
  return internals.get(store);
}

/** Creates the in-process store. Nothing survives the process. */
export function memoryStore(opts: MemoryStoreOptions = {}): Store {
  const agents = new Map<string, AgentRecords>();
  /** workerTarget -> (agentId -> ready score) */
  const ready = new Map<string, Map<string, number>>();
  /** "agentId\nturnId\ntoolCallId" -> deadline */
  const deadlines = new Map<string, number>();
  const verdicts = new Map<string, { agentId: string; turnId: string; status: string; json: string }>();
  /** Transport dedup: messageId -> its record (see DeliveryResponse in port.ts). Admission bookkeeping, not agent state. */
  const deliveries = new Map<string, DeliveryRecord>();
  const liveDelivery = (messageId: string, now: number) => {
    const cur = deliveries.get(messageId);
    return cur !== undefined && cur.until > now ? cur : null;
  };
  // Expired records go at the next new claim (a development store; Redis expires them itself).
  const purgeDeliveries = (now: number) => {
    for (const [k, v] of deliveries) if (v.until <= now) deliveries.delete(k);
  };
  /** Deletion markers (store/port.ts invariant 22): agentId -> deletion time (ms). */
  const deleted = new Map<string, number>();
  /** Rate-limit buckets: key -> TAT (us). Admission bookkeeping, not agent state: memoryStoreState leaves it out. */
  const buckets = new Map<string, number>();
  /** Definition sets (invariant 23): sorted agent names joined by "," -> last announced (ms). */
  const definitionSets = new Map<string, number>();
  /** Single-consumer target leases: target -> holder and until (ms). */
  const targetLeases = new Map<string, { holder: string; until: number }>();
  const fault = opts.faults ?? (() => {});
  /** The tool registry: role -> entry (plain JSON), and `<role>\n<form>` -> the method first seen with that form. */
  const tools = new Map<string, unknown>();
  const toolForms = new Map<string, string>();

  // ------------------------------------------------------------ journal

  let journal: Array<() => void> | null = null;
  const log = (undo: () => void) => {
    if (!journal) throw new Error("memoryStore: write outside an operation");
    journal.push(undo);
  };
  /** Runs one operation: all of it, or (on any exception) none of it. */
  function atomic<T>(fn: () => T): T {
    journal = [];
    try {
      const r = fn();
      journal = null;
      return r;
    } catch (err) {
      const undo = journal ?? [];
      journal = null;
      for (let i = undo.length - 1; i >= 0; i--) undo[i]();
      throw err;
    }
  }
  const copy = <T>(v: T): T => {
    fault("copy");
    return v === undefined ? v : JSON.parse(JSON.stringify(v));
  };
  /** Journaled writes: each records how to undo itself before it changes anything. */
  const w = {
    set<O extends object, K extends keyof O>(o: O, k: K, v: O[K]) {
      fault("write");
      const had = Object.prototype.hasOwnProperty.call(o, k);
      const old = o[k];
      log(() => {
        if (had) o[k] = old;
        else delete o[k];
      });
      o[k] = v;
    },
    push<T>(arr: T[], v: T) {
      fault("write");
      const len = arr.length;
      log(() => {
        arr.length = len;
      });
      arr.push(v);
    },
    mapSet<K, V>(m: Map<K, V>, k: K, v: V) {
      fault("write");
      const had = m.has(k);
      const old = m.get(k);
      log(() => {
        if (had) m.set(k, old as V);
        else m.delete(k);
      });
      m.set(k, v);
    },
    mapDelete<K, V>(m: Map<K, V>, k: K) {
      if (!m.has(k)) return;
      fault("write");
      const old = m.get(k) as V;
      log(() => {
        m.set(k, old);
      });
      m.delete(k);
    },
  };

  // ------------------------------------------------------------ helpers

  const readyOf = (target: string) => {
    let m = ready.get(target);
    if (!m) {
      m = new Map();
      w.mapSet(ready, target, m);
    }
    return m;
  };
  const ring = (a: AgentRecords, score: number) => {
    const q = readyOf(a.head.workerTarget);
    const cur = q.get(a.head.agentId);
    if (cur === undefined || score < cur) w.mapSet(q, a.head.agentId, score);
  };
  const setReady = (a: AgentRecords, score: number | null) => {
    const q = readyOf(a.head.workerTarget);
    if (score === null) w.mapDelete(q, a.head.agentId);
    else w.mapSet(q, a.head.agentId, score);
  };
  /** Builds an event from data already copied; the append itself cannot fail half-way. */
  const eventOf = (a: AgentRecords, offset: number, turnId: string | null, type: string, data: Record<string, unknown>, at: number) => {
    const e: StoredEvent = { id: a.head.lastEventId + offset, at, turnId, type, data };
    return { e, bytes: utf8Length(JSON.stringify(e)) };
  };
  const appendEvents = (a: AgentRecords, built: Array<{ e: StoredEvent; bytes: number }>) => {
    for (const b of built) {
      w.push(a.events, b.e);
      w.push(a.eventBytes, b.bytes);
    }
    if (built.length > 0) w.set(a.head, "lastEventId", a.head.lastEventId + built.length);
  };
  const leaseHeld = (h: AgentHead, now: number) => h.leaseOwner !== null && h.leaseUntil > now;
  /** What a claim would take now; mirrors store/lua/includes/claim.lua. */
  const claimable = (a: AgentRecords, now: number) =>
    a.mail.length > 0 ||
    (a.head.activeTurnId === null && a.tasks.length > 0) ||
    (a.head.runnableAt !== null && a.head.runnableAt <= now);
  /** Where a turn is; null when unknown. Mirrors store/lua/includes/turns.lua. */
  const turnStatus = (a: AgentRecords, turnId: string): TurnStatus | null => {
    if (a.head.activeTurnId === turnId) return "active";
    const st = a.turns.get(turnId);
    // Listed as queued but no longer in the inbox: only a claim takes a task out, so it ran.
    if (st === "queued" && !a.tasks.some((t) => t.turnId === turnId)) return "ended";
    return st ?? null;
  };

  /**
   * Applies the retention rules (store/retention.ts) after a commit that
   * ended a turn; mirrors store/lua/includes/retention.lua. Journaled.
   */
  function retain(a: AgentRecords, limits: RetentionLimits, snapshot: unknown, now: number) {
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
   * Ends the active turn with `end` (invariant 12); mirrors
   * store/lua/includes/end_turn.lua. Copies everything first, so a value that
   * cannot be copied throws before anything is written; the returned
   * function does the (journaled) writes and answers the new version.
   * `before`: the caller's own events, logged ahead of the end's.
   */
  function prepareEndTurn(a: AgentRecords, end: TurnEnd, now: number, before: Array<{ type: string; data: Record<string, unknown> }>): () => number {
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
      setReady(a, a.tasks.length > 0 ? now : null);
      return h.version;
    };
  }

  function doClaim(a: AgentRecords, req: { workerId: string; leaseMs: number; now: number }): ClaimResult {
    const h = a.head;
    if (leaseHeld(h, req.now)) return { status: "busy", agentId: h.agentId, leaseUntil: h.leaseUntil };
    if (!claimable(a, req.now)) {
      // A bell with nothing behind it: forget the bell, keep a future wakeup.
      setReady(a, h.runnableAt);
      return { status: "empty", agentId: h.agentId };
    }
    const previousLease = h.leaseOwner === null ? null : { workerId: h.leaseOwner, leaseUntil: h.leaseUntil, updatedAt: h.updatedAt };
    return takeLease(a, req, previousLease, copy(a.mail));
  }

  /** The writes of a claim (shared with a chaining commit, invariant 20): the next task if no turn is active, a new epoch, the lease. */
  function takeLease(
    a: AgentRecords,
    req: { workerId: string; leaseMs: number; now: number },
    previousLease: PreviousLease | null,
    mail: MailItem[],
  ): Extract<ClaimResult, { status: "claimed" }> {
    const h = a.head;
    if (h.activeTurnId === null && a.tasks.length > 0) {
      const task = a.tasks[0];
      w.set(a, "tasks", a.tasks.slice(1));
      w.set(h, "activeTurnId", task.turnId);
      w.set(h, "currentTask", task);
      w.set(h, "pendingTasks", a.tasks.length);
      w.set(h, "runnableAt", req.now);
    }
    w.set(h, "epoch", h.epoch + 1);
    w.set(h, "leaseOwner", req.workerId);
    w.set(h, "leaseUntil", req.now + req.leaseMs);
    w.set(h, "updatedAt", req.now);
    setReady(a, h.leaseUntil);
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

  const store: Store = {
    kind: "memory",
    // One process holds the whole store: the in-process channel reaches every reader.
    live: processLive(),

    async enqueueTask(req: EnqueueTaskRequest): Promise<EnqueueTaskResult> {
      return atomic(() => {
        if (req.refuseDeleted && deleted.has(req.agentId)) return { status: "agent_deleted", deletedAt: deleted.get(req.agentId)! };
        let a = agents.get(req.agentId);
        if (a && a.head.agentName !== req.agentName) {
          return { status: "definition_conflict", boundTo: a.head.agentName };
        }
        if (a && req.idempotencyKey !== undefined) {
          const prior = a.idempotency.get(req.idempotencyKey);
          if (prior !== undefined) return { status: "duplicate", turnId: prior };
        }
        // Copies first: an input that cannot be copied throws before anything changed.
        const input = copy(req.input);
        const options = copy(req.options);
        const data = { turnId: req.turnId, options: copy(req.options), inputBytes: inputBytes(input) };
        const task: InboxTask = {
          turnId: req.turnId,
          options,
          enqueuedAt: req.now,
          ...(req.idempotencyKey !== undefined ? { idempotencyKey: req.idempotencyKey } : {}),
        };
        if (!a) {
          a = {
            head: {
              agentId: req.agentId,
              agentName: req.agentName,
              workerTarget: req.workerTarget,
              createdAt: req.now,
              updatedAt: req.now,
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
        const ev = eventOf(a, 1, req.turnId, "task_enqueued", data, req.now);
        // Writes.
        if (!agents.has(req.agentId)) w.mapSet(agents, req.agentId, a);
        w.push(a.tasks, task);
        w.set(a.head, "pendingTasks", a.tasks.length);
        if (req.idempotencyKey !== undefined) w.mapSet(a.idempotency, req.idempotencyKey, req.turnId);
        w.mapSet(a.turns, req.turnId, "queued");
        w.mapSet(a.inputs, req.turnId, input);
        appendEvents(a, [ev]);
        ring(a, req.now);
        return { status: "enqueued", turnId: req.turnId };
      });
    },

    async deliverToolResult(req: DeliverToolResultRequest): Promise<DeliverToolResultResult> {
      return atomic(() => {
        const a = agents.get(req.agentId);
        if (!a) return { status: "agent_not_found" };
        const rec = a.toolCalls.get(callKey(req.turnId, req.toolCallId));
        if (!rec) return { status: "unknown_call" };
        // An in-process call is answered by its tool (the worker's commit) or the watchdog, never from outside.
        if (!rec.external && req.source !== "watchdog") return { status: "not_external" };
        if (rec.delegated === true && req.source !== "delegation" && req.source !== "watchdog") return { status: "delegated_call" };
        if (rec.status === "resolved") return answerResolved(copy(rec), req);
        if (a.head.activeTurnId !== req.turnId) return { status: "turn_finished" };
        const outcome = copy(req.outcome);
        const contractValidation = copy(req.contractValidation ?? notApplied());
        const resolved: ToolCallRecord = {
          ...rec,
          status: "resolved",
          outcome,
          afterExecution: req.afterExecution,
          source: req.source,
          resolvedAt: req.now,
          contractValidation,
        };
        const mail: MailItem = {
          kind: "tool_result",
          seq: a.mailSeq + 1,
          at: req.now,
          turnId: req.turnId,
          toolCallId: req.toolCallId,
          outcome: copy(req.outcome),
          afterExecution: req.afterExecution,
          source: req.source,
        };
        const ev = eventOf(a, 1, req.turnId, "tool_result_received", {
          toolCallId: req.toolCallId,
          ok: req.outcome.ok === true,
          source: req.source,
          afterExecution: req.afterExecution,
          contractValidation: copy(contractValidation),
        }, req.now);
        const reply = copy(resolved);
        // Writes.
        w.mapSet(a.toolCalls, callKey(req.turnId, req.toolCallId), resolved);
        w.mapDelete(deadlines, `${req.agentId}\n${req.turnId}\n${req.toolCallId}`);
        w.set(a, "mailSeq", mail.seq);
        w.push(a.mail, mail);
        w.set(a.head, "pendingMail", a.mail.length);
        appendEvents(a, [ev]);
        ring(a, req.now);
        return { status: "accepted", record: reply };
      });
    },

    async requestCancel(req: CancelRequest): Promise<CancelResult> {
      return atomic(() => {
        const a = agents.get(req.agentId);
        if (!a) return { status: "agent_not_found" };
        let turnId: string;
        if (req.turnId === undefined) {
          if (a.head.activeTurnId === null) return { status: "not_active" };
          turnId = a.head.activeTurnId;
        } else {
          const st = turnStatus(a, req.turnId);
          if (st === null) return { status: "turn_not_found" };
          if (st === "queued") return { status: "turn_not_started" };
          if (st !== "active") return { status: "turn_finished" };
          turnId = req.turnId;
        }
        const reason = String(req.reason);
        const mail: MailItem = { kind: "cancel", seq: a.mailSeq + 1, at: req.now, reason, turnId };
        const ev = eventOf(a, 1, turnId, "cancel_requested", { reason, turnId }, req.now);
        // Writes.
        w.set(a, "mailSeq", mail.seq);
        w.push(a.mail, mail);
        w.set(a.head, "pendingMail", a.mail.length);
        appendEvents(a, [ev]);
        ring(a, req.now);
        return { status: "accepted", turnId };
      });
    },

    async cancelTask(req: CancelTaskRequest): Promise<CancelTaskResult> {
      return atomic(() => {
        const a = agents.get(req.agentId);
        if (!a) return { status: "agent_not_found" };
        const st = turnStatus(a, req.turnId);
        if (st === null) return { status: "turn_not_found" };
        if (st === "active") return { status: "turn_started" };
        if (st === "cancelled") return { status: "cancelled", already: true };
        if (st !== "queued") return { status: "turn_finished" };
        const reason = String(req.reason);
        const ev = eventOf(a, 1, req.turnId, "task_cancelled", { turnId: req.turnId, reason }, req.now);
        const idem = a.tasks.find((t) => t.turnId === req.turnId)?.idempotencyKey ?? null;
        // Writes.
        // Ended without messages (msgEnd 0): retention may drop its records like those of any ended turn.
        w.push(a.ended, { turnId: req.turnId, idem, msgEnd: 0 });
        w.set(a, "endedTotal", a.endedTotal + 1);
        w.set(a, "tasks", a.tasks.filter((t) => t.turnId !== req.turnId));
        w.set(a.head, "pendingTasks", a.tasks.length);
        w.mapSet(a.turns, req.turnId, "cancelled");
        appendEvents(a, [ev]);
        return { status: "cancelled", already: false };
      });
    },

    async getTurn(agentId, turnId) {
      const a = agents.get(agentId);
      if (!a) return null;
      const status = turnStatus(a, turnId);
      if (status === null) return null;
      return { turnId, status, ...(a.inputs.has(turnId) ? { input: copy(a.inputs.get(turnId)) } : {}) };
    },

    async claim(req: ClaimRequest): Promise<ClaimResult> {
      return atomic(() => {
        const a = agents.get(req.agentId);
        if (!a) return { status: "agent_not_found" };
        return doClaim(a, req);
      });
    },

    async claimNext(req: ClaimNextRequest): Promise<ClaimResult> {
      return atomic(() => {
        const q = readyOf(req.workerTarget);
        // Oldest due bell first; skip (and re-score) bells of agents that are busy or empty.
        const due = [...q.entries()].filter(([, s]) => s <= req.now).sort((x, y) => x[1] - y[1]);
        let foreign = 0;
        req.agentNames?.forEach(checkAgentName);
        for (const [agentId] of due) {
          const a = agents.get(agentId);
          if (!a) {
            w.mapDelete(q, agentId);
            continue;
          }
          // Another deployment's agent (invariant 23): left as it is, for a worker that has its definition.
          if (req.agentNames && !req.agentNames.includes(a.head.agentName) && !leaseHeld(a.head, req.now) && claimable(a, req.now)) {
            foreign++;
            continue;
          }
          const r = doClaim(a, req);
          if (r.status === "claimed") return r;
          if (r.status === "busy") w.mapSet(q, agentId, r.leaseUntil);
        }
        return foreign > 0 ? { status: "empty", foreign } : { status: "empty" };
      });
    },

    async renewLease(req: RenewRequest) {
      return atomic(() => {
        const a = agents.get(req.agentId);
        if (!a) return { status: "lost" as const };
        const h = a.head;
        if (h.epoch !== req.epoch || h.leaseOwner !== req.workerId || h.leaseUntil <= req.now) {
          return { status: "lost" as const };
        }
        w.set(h, "leaseUntil", req.now + req.leaseMs);
        setReady(a, h.leaseUntil);
        return { status: "renewed" as const, leaseUntil: h.leaseUntil };
      });
    },

    async commit(req: CommitRequest): Promise<CommitResult> {
      return atomic((): CommitResult => {
        const a = agents.get(req.agentId);
        if (!a) return { status: "conflict", reason: "agent_not_found" };
        const h = a.head;
        // All checks before the first write.
        if (h.epoch !== req.epoch || h.leaseOwner !== req.workerId || h.leaseUntil <= req.now) {
          return { status: "conflict", reason: "fenced" };
        }
        if (h.version !== req.expectedVersion) return { status: "conflict", reason: "version" };
        if (h.activeTurnId !== req.turnId) return { status: "conflict", reason: "turn" };
        for (const r of req.resolveToolCalls) {
          const rec = a.toolCalls.get(callKey(req.turnId ?? "", r.toolCallId));
          if (!rec || rec.status !== "pending") {
            // Someone (the watchdog) resolved it first: give the agent back at once.
            w.set(h, "leaseOwner", null);
            w.set(h, "leaseUntil", 0);
            setReady(a, req.now);
            return { status: "conflict", reason: "tool_call_resolved" };
          }
        }
        if (req.stopAtCancel && a.mail.some((m) => m.kind === "cancel" && m.turnId === h.activeTurnId && m.seq > req.ackMailThrough)) {
          // A cancel of this turn waits (invariant 21): give the agent back at once so a claim applies it.
          w.set(h, "leaseOwner", null);
          w.set(h, "leaseUntil", 0);
          setReady(a, req.now);
          return { status: "conflict", reason: "cancel_pending" };
        }
        // Copies of everything the commit stores, before the first write.
        const recorded = req.recordToolCalls.map((c): ToolCallRecord => ({
          ...copy(c),
          agentId: req.agentId,
          status: "pending",
          recordedAt: req.now,
        }));
        const resolved = req.resolveToolCalls.map((r): ToolCallRecord => ({
          ...a.toolCalls.get(callKey(req.turnId ?? "", r.toolCallId))!,
          status: "resolved",
          outcome: copy(r.outcome),
          afterExecution: r.afterExecution,
          source: "inline",
          resolvedAt: req.now,
          contractValidation: copy(r.contractValidation ?? notApplied()),
        }));
        const messages = req.messages.map((m) => copy(m));
        const events = req.events.map((e, i) =>
          eventOf(a, i + 1, req.turnId ?? req.activeTurnId, String(e.type), copy(e.data), req.now)
        );
        const snapshot = copy(req.snapshot);
        if (req.retention) resolveRetention(req.retention);
        if (req.summary !== undefined && !Number.isSafeInteger(req.summary.through)) {
          throw new StoreInputError(`summary.through must be an integer (ms), got ${req.summary.through}`);
        }
        const summary = req.summary === undefined ? undefined : { content: String(req.summary.content), through: Number(req.summary.through) };
        const endsTurn = req.activeTurnId === null && h.activeTurnId !== null;
        const endedIdem = endsTurn ? (h.currentTask?.idempotencyKey ?? null) : null;
        // Writes.
        for (const rec of recorded) {
          w.mapSet(a.toolCalls, callKey(rec.turnId, rec.toolCallId), rec);
          w.mapSet(deadlines, `${req.agentId}\n${rec.turnId}\n${rec.toolCallId}`, rec.deadline);
        }
        for (const rec of resolved) {
          w.mapSet(a.toolCalls, callKey(rec.turnId, rec.toolCallId), rec);
          w.mapDelete(deadlines, `${req.agentId}\n${rec.turnId}\n${rec.toolCallId}`);
        }
        if (req.ackMailThrough > 0) w.set(a, "mail", a.mail.filter((m) => m.seq > req.ackMailThrough));
        for (const m of messages) w.push(a.messages, m);
        appendEvents(a, events);
        w.set(a, "evBytes", a.evBytes + events.reduce((n, b) => n + b.bytes, 0));
        if (summary) w.set(a, "summary", summary);
        w.set(h, "snapshot", snapshot);
        w.set(h, "state", req.state);
        w.set(h, "version", h.version + 1);
        w.set(h, "updatedAt", req.now);
        w.set(h, "messageCount", h.messagesTrimmedThrough + a.messages.length);
        w.set(h, "pendingMail", a.mail.length);
        if (endsTurn) {
          const ended = h.activeTurnId!;
          // The turn ended: its unresolved calls can no longer be answered.
          for (const rec of a.toolCalls.values()) {
            if (rec.turnId === ended && rec.status === "pending") {
              w.mapDelete(deadlines, `${req.agentId}\n${rec.turnId}\n${rec.toolCallId}`);
            }
          }
          w.mapSet(a.turns, ended, req.state === "done" || req.state === "failed" ? req.state : "ended");
          w.set(h, "currentTask", null);
          w.push(a.ended, { turnId: ended, idem: endedIdem, msgEnd: h.messageCount });
          w.set(a, "endedTotal", a.endedTotal + 1);
          if (req.retention) retain(a, req.retention, snapshot, req.now);
        }
        w.set(h, "activeTurnId", req.activeTurnId);
        if (req.chainNextTask && endsTurn && req.release && a.mail.length === 0 && a.tasks.length > 0) {
          // Turn chaining (invariant 20): the next task is claimed by this very commit; the lease stays.
          const chained = takeLease(a, req, null, []);
          return { status: "applied", version: h.version, lastEventId: h.lastEventId, messagesTrimmedThrough: h.messagesTrimmedThrough, chained };
        }
        if (req.release) {
          w.set(h, "leaseOwner", null);
          w.set(h, "leaseUntil", 0);
          w.set(h, "runnableAt", req.release.runnableAt);
          if (claimable(a, req.now)) setReady(a, req.now);
          else setReady(a, h.runnableAt);
        } else {
          w.set(h, "runnableAt", req.now);
          w.set(h, "leaseUntil", req.now + req.leaseMs);
          setReady(a, h.leaseUntil);
        }
        return { status: "applied", version: h.version, lastEventId: h.lastEventId, messagesTrimmedThrough: h.messagesTrimmedThrough };
      });
    },

    async recordClaimFailure(req: ClaimFailureRequest): Promise<ClaimFailureResult> {
      return atomic((): ClaimFailureResult => {
        const a = agents.get(req.agentId);
        if (!a) return { status: "agent_not_found" };
        const h = a.head;
        if (h.epoch !== req.epoch || h.leaseOwner !== req.workerId) return { status: "stale" };
        if (h.version !== req.expectedVersion || h.activeTurnId !== req.turnId) return { status: "stale" };
        const prior = a.claimFailures?.turnId === req.turnId ? a.claimFailures.count : 0;
        const failures = prior + 1;
        const max = Math.max(1, req.maxFailures);
        const error = String(req.error);
        if (failures < max) {
          const retryAt = req.now + req.retryBaseMs * 2 ** Math.min(failures - 1, 5);
          const ev = eventOf(a, 1, req.turnId, "claim_failed", {
            attempt: failures, maxAttempts: max, error, workerId: req.workerId, retryAt,
          }, req.now);
          // Writes.
          w.set(a, "claimFailures", { turnId: req.turnId, count: failures });
          appendEvents(a, [ev]);
          w.set(h, "leaseOwner", null);
          w.set(h, "leaseUntil", 0);
          w.set(h, "runnableAt", retryAt);
          w.set(h, "updatedAt", req.now);
          setReady(a, retryAt);
          return { status: "retry", failures, retryAt };
        }
        const end = prepareEndTurn(a, req.end, req.now, [{
          type: "claim_failed",
          data: { attempt: failures, maxAttempts: max, error, workerId: req.workerId, retryAt: null },
        }]);
        return { status: "turn_failed", failures, version: end() };
      });
    },

    async resetTurn(req: ResetTurnRequest): Promise<ResetTurnResult> {
      return atomic((): ResetTurnResult => {
        const a = agents.get(req.agentId);
        if (!a) return { status: "agent_not_found" };
        const h = a.head;
        if (h.activeTurnId === null) return { status: "not_active" };
        if (h.version !== req.expectedVersion || h.activeTurnId !== req.turnId) return { status: "conflict" };
        const end = prepareEndTurn(a, req.end, req.now, []);
        // Writes. Fence out a worker that may still run the turn.
        w.set(h, "epoch", h.epoch + 1);
        const version = end();
        return { status: "reset", version, epoch: h.epoch };
      });
    },

    async ping() {},

    async announceDefinitionSet(req) {
      const own = [...req.agents].map(checkAgentName).sort().join(",");
      definitionSets.set(own, req.now);
      const others: Array<{ agents: string[]; seenAt: number }> = [];
      for (const [set, at] of [...definitionSets]) {
        if (at < req.now - req.ttlMs) definitionSets.delete(set);
        else if (set !== own) others.push({ agents: set.split(","), seenAt: at });
      }
      return { others };
    },

    async getAgent(agentId) {
      const a = agents.get(agentId);
      return a ? copy(a.head) : null;
    },

    async getToolCalls(agentId, turnId) {
      const a = agents.get(agentId);
      if (!a) return [];
      return [...a.toolCalls.values()].filter((r) => r.turnId === turnId).map((r) => normalizeRecord(copy(r)));
    },

    async readMessages(agentId, fromIndex = 0) {
      const a = agents.get(agentId);
      if (!a) return [];
      // Indexes are logical (invariant 18); a turn's user message is stored as a reference to its input (store/inputs.ts).
      return a.messages.slice(Math.max(0, fromIndex - a.head.messagesTrimmedThrough)).map((m) =>
        m.inputOf === undefined ? copy(m) : { role: m.role, content: a.inputs.has(m.inputOf) ? inputText(a.inputs.get(m.inputOf)) : "" }
      );
    },

    async readConversation(agentId, opts) {
      const a = agents.get(agentId);
      if (!a) return null;
      const from = Math.max(a.head.messagesTrimmedThrough, opts?.fromSummary ? (a.summary?.through ?? 0) : 0);
      return { summary: copy(a.summary), firstIndex: from, messages: await store.readMessages(agentId, from) };
    },

    async readCheckpoint(agentId) {
      const a = agents.get(agentId);
      const c = a?.ckpts[0];
      if (!a || !c || a.head.eventsTrimmedThrough === 0 || c.mark.eventId !== a.head.eventsTrimmedThrough) return null;
      return { eventId: c.mark.eventId, at: c.at, snapshot: copy(c.snapshot), messageIndex: c.mark.messageIndex };
    },

    async deleteAgent(agentId, now) {
      return atomic(() => {
        const a = agents.get(agentId);
        if (!a) return { status: "agent_not_found" as const };
        const at = now === undefined ? 0 : int(now, "now");
        // Writes: the agent's records, its bell, its deadlines; verdict records stay (invariant 19), delivery records expire.
        w.mapDelete(agents, agentId);
        // The queue is replaced whole, so an undo keeps its order (claimNext breaks ties by insertion).
        const q = ready.get(a.head.workerTarget);
        if (q?.has(agentId)) w.mapSet(ready, a.head.workerTarget, new Map([...q].filter(([id]) => id !== agentId)));
        for (const k of [...deadlines.keys()]) if (k.startsWith(`${agentId}\n`)) w.mapDelete(deadlines, k);
        // The marker a delegation's dispatch reads (invariant 22).
        w.mapSet(deleted, agentId, at);
        return { status: "deleted" as const };
      });
    },

    async readEvents(agentId, after, limit, maxBytes) {
      const a = agents.get(agentId);
      if (!a || limit <= 0) return [];
      // Ids are dense, so the event with id k sits at index k-1-eventsTrimmedThrough.
      const from = Math.max(0, after - a.head.eventsTrimmedThrough);
      let to = Math.min(a.events.length, from + limit);
      if (maxBytes !== undefined) {
        // Stop before the event that would pass the budget; the first one always comes.
        let used = 0;
        for (let i = from; i < to; i++) {
          used += a.eventBytes[i];
          if (i > from && used > maxBytes) {
            to = i;
            break;
          }
        }
      }
      return copy(a.events.slice(from, to));
    },

    async dueToolCalls(now, limit) {
      return [...deadlines.entries()]
        .filter(([, d]) => d <= now)
        .sort((x, y) => x[1] - y[1])
        .slice(0, limit)
        .map(([k]) => {
          const [agentId, turnId, toolCallId] = k.split("\n");
          return { agentId, turnId, toolCallId };
        });
    },

    async skipDueToolCall(req: SkipDueToolCallRequest) {
      return atomic(() => {
        const key = `${req.agentId}\n${req.turnId}\n${req.toolCallId}`;
        if (!deadlines.has(key)) return { status: "absent" as const };
        const a = agents.get(req.agentId);
        const ev = a
          ? eventOf(a, 1, req.turnId, "watchdog_skipped", {
            toolCallId: req.toolCallId,
            reason: String(req.reason),
            retryAt: req.retryAt,
          }, req.now)
          : null;
        // Writes.
        if (req.retryAt === null) w.mapDelete(deadlines, key);
        else w.mapSet(deadlines, key, req.retryAt);
        if (a && ev) appendEvents(a, [ev]);
        return { status: "skipped" as const };
      });
    },

    async readyCount(workerTarget, now) {
      let n = 0;
      for (const at of ready.get(workerTarget)?.values() ?? []) if (at <= now) n++;
      return n;
    },

    async nextReadyAt(workerTarget) {
      const q = ready.get(workerTarget);
      if (!q || q.size === 0) return null;
      return Math.min(...q.values());
    },

    async putVerdict(req: VerdictPut) {
      return atomic(() => {
        if (verdicts.has(req.verdictId)) return { status: "exists" as const };
        const a = agents.get(req.agentId);
        const rec = { agentId: String(req.agentId), turnId: String(req.turnId), status: String(req.status), json: String(req.json) };
        w.mapSet(verdicts, req.verdictId, rec);
        if (a) w.push(a.verdicts, req.verdictId);
        return { status: "written" as const };
      });
    },

    async claimDelivery(req: ClaimDeliveryRequest): Promise<ClaimDeliveryResult> {
      const { messageId, target, holder, now } = deliveryRef(req);
      const windowMs = int(req.windowMs, "windowMs");
      const holdMs = int(req.holdMs, "holdMs");
      const cur = liveDelivery(messageId, now);
      if (cur === null) {
        purgeDeliveries(now);
        deliveries.set(messageId, { until: now + windowMs, holdUntil: now + holdMs, holder, target, response: null });
        return { status: "fresh" };
      }
      if (cur.target !== target) return { status: "other_target" };
      if (cur.response !== null) return { status: "answered", response: structuredClone(cur.response) };
      if (cur.holder !== "" && cur.holdUntil > now) return { status: "in_progress", holdUntil: cur.holdUntil };
      deliveries.set(messageId, { ...cur, holder, holdUntil: now + holdMs });
      return { status: "fresh" };
    },

    async renewDelivery(req: RenewDeliveryRequest): Promise<SettleDeliveryResult> {
      const { messageId, target, holder, now } = deliveryRef(req);
      const holdMs = int(req.holdMs, "holdMs");
      const cur = liveDelivery(messageId, now);
      if (cur === null || cur.target !== target || cur.holder !== holder || cur.response !== null) return { status: "lost" };
      deliveries.set(messageId, { ...cur, holdUntil: now + holdMs });
      return { status: "renewed" };
    },

    async recordDelivery(req: RecordDeliveryRequest): Promise<SettleDeliveryResult> {
      const { messageId, target, holder, now } = deliveryRef(req);
      const windowMs = int(req.windowMs, "windowMs");
      const cur = liveDelivery(messageId, now);
      if (cur === null || cur.target !== target || cur.holder !== holder || cur.response !== null) return { status: "lost" };
      if (req.response === null) deliveries.set(messageId, { ...cur, holder: "", holdUntil: 0 });
      else {
        const response = { status: int(req.response.status, "status"), contentType: String(req.response.contentType), body: String(req.response.body) };
        deliveries.set(messageId, { ...cur, holder: "", holdUntil: 0, until: Math.max(cur.until, now + windowMs), response });
      }
      return { status: "written" };
    },

    async rateLimit(req: RateLimitRequest): Promise<RateLimitResult> {
      const now = int(req.now, "now");
      const { intervals, tolerances } = gcraArgs(req.buckets);
      const nowUs = now * 1000;
      const next: number[] = [];
      let worst = -1;
      let worstWait = 0;
      req.buckets.forEach((b, i) => {
        const tat = Math.max(buckets.get(b.key) ?? 0, nowUs) + Number(intervals[i]);
        const wait = tat - Number(tolerances[i]) - nowUs;
        if (wait > worstWait) {
          worstWait = wait;
          worst = i;
        }
        next.push(tat);
      });
      if (worst >= 0) return { status: "limited", bucket: worst, retryAfterMs: Math.ceil(worstWait / 1000) };
      req.buckets.forEach((b, i) => buckets.set(b.key, next[i]));
      // Past TATs limit nothing: drop them now and then (Redis expires them itself).
      if (buckets.size > 10_000) for (const [k, t] of buckets) if (t <= nowUs) buckets.delete(k);
      return { status: "allowed" };
    },

    async acquireTargetLease(req: TargetLeaseRequest): Promise<TargetLeaseResult> {
      checkTarget(req.workerTarget);
      checkHolder(req.holder);
      const now = int(req.now, "now");
      const leaseMs = int(req.leaseMs, "leaseMs");
      if (leaseMs < 1) throw new StoreInputError(`leaseMs must be at least 1, got ${leaseMs}`);
      const cur = targetLeases.get(req.workerTarget);
      if (cur && cur.until > now && cur.holder !== req.holder) return { status: "busy", holder: cur.holder, leaseUntil: cur.until };
      targetLeases.set(req.workerTarget, { holder: req.holder, until: now + leaseMs });
      return { status: "held", leaseUntil: now + leaseMs };
    },

    async releaseTargetLease(req) {
      checkTarget(req.workerTarget);
      checkHolder(req.holder);
      const now = int(req.now, "now");
      const cur = targetLeases.get(req.workerTarget);
      if (!cur || cur.until <= now || cur.holder !== req.holder) return { status: "not_held" as const };
      targetLeases.delete(req.workerTarget);
      return { status: "released" as const };
    },

    async getVerdict(verdictId) {
      return verdicts.get(verdictId)?.json ?? null;
    },

    async listVerdicts(agentId, filter: VerdictFilter) {
      const a = agents.get(agentId);
      if (!a) return [];
      return a.verdicts
        .map((id) => verdicts.get(id)!)
        .filter((v) => (filter.turnId === undefined || v.turnId === filter.turnId) &&
          (filter.status === undefined || v.status === filter.status))
        .map((v) => v.json);
    },

    async listAgents(req: ListAgentsRequest): Promise<AgentIndexEntry[]> {
      // The map of agents is this store's index: every head carries its updatedAt (port invariant 14).
      if (req.limit <= 0) return [];
      const since = req.updatedSince ?? -Infinity;
      const after = req.after;
      const below = (e: AgentIndexEntry) =>
        !after || e.updatedAt < after.updatedAt || (e.updatedAt === after.updatedAt && e.agentId < after.agentId);
      return [...agents.values()]
        .map((a) => ({ agentId: a.head.agentId, updatedAt: a.head.updatedAt }))
        .filter((e) => e.updatedAt >= since && below(e))
        .sort((x, y) => y.updatedAt - x.updatedAt || (x.agentId < y.agentId ? 1 : x.agentId > y.agentId ? -1 : 0))
        .slice(0, req.limit);
    },

    async createFork(req: CreateForkRequest): Promise<CreateForkResult> {
      return atomic(() => {
        if (agents.has(req.agentId)) return { status: "exists" };
        const turn = req.activeTurnId;
        // Copies first.
        const snapshot = copy(req.snapshot);
        const currentTask = copy(req.currentTask);
        const input = turn !== null && req.input !== undefined ? copy(req.input) : undefined;
        const messages = copy(req.messages);
        const calls = turn === null ? [] : req.toolCalls.map((c): ToolCallRecord => ({
          ...copy(c), turnId: turn, agentId: req.agentId, status: "pending", recordedAt: req.now,
        }));
        const data = copy(req.event.data);
        const a: AgentRecords = {
          head: {
            agentId: req.agentId,
            agentName: req.agentName,
            workerTarget: req.workerTarget,
            createdAt: req.now,
            updatedAt: req.now,
            activeTurnId: turn,
            currentTask,
            epoch: 0,
            version: 0,
            snapshot,
            state: req.state,
            leaseOwner: null,
            leaseUntil: 0,
            runnableAt: req.runnableAt,
            pendingTasks: 0,
            pendingMail: 0,
            messageCount: messages.length,
            lastEventId: 0,
            eventsTrimmedThrough: 0,
            messagesTrimmedThrough: 0,
          },
          tasks: [],
          mail: [],
          mailSeq: 0,
          messages,
          events: [],
          eventBytes: [],
          toolCalls: new Map(calls.map((c) => [callKey(c.turnId, c.toolCallId), c])),
          idempotency: new Map(),
          turns: new Map(),
          inputs: new Map(input !== undefined && turn !== null ? [[turn, input]] : []),
          verdicts: [],
          claimFailures: null,
          ...freshRetention(),
        };
        const ev = eventOf(a, 1, turn, req.event.type, data, req.now);
        // Writes.
        w.mapSet(agents, req.agentId, a);
        appendEvents(a, [ev]);
        for (const c of calls) w.mapSet(deadlines, `${req.agentId}\n${c.turnId}\n${c.toolCallId}`, c.deadline);
        if (req.runnableAt !== null) setReady(a, req.runnableAt);
        return { status: "created", lastEventId: a.head.lastEventId };
      });
    },

    async recordFork(req: RecordForkRequest) {
      return atomic(() => {
        const a = agents.get(req.agentId);
        if (!a) return { status: "agent_not_found" as const };
        const ev = eventOf(a, 1, null, req.event.type, copy(req.event.data), req.now);
        appendEvents(a, [ev]);
        return { status: "recorded" as const, eventId: a.head.lastEventId };
      });
    },

    async recordToolMethod(req: RecordToolMethodRequest): Promise<RecordToolMethodResult> {
      return atomic(() => {
        checkToolName(req.role, "role");
        checkToolName(req.method, "method");
        if (!Number.isSafeInteger(req.now)) throw new StoreInputError(`now must be an integer (ms), got ${req.now}`);
        const n = toolCalls(req.calls);
        const raw = tools.get(req.role);
        const stored = raw && typeof raw === "object" && !Array.isArray(raw) ? copy(raw as Record<string, unknown>) : {};
        const methods = Array.isArray(stored.methods) ? stored.methods as unknown[] : [];
        const aliases = Array.isArray(stored.aliases) ? stored.aliases as unknown[] : [];
        const formKey = `${req.role}\n${methodForm(req.method)}`;
        const canonical = toolForms.get(formKey);
        let added: RecordToolMethodResult["added"] = "none";
        if (canonical === undefined) {
          if (!methods.includes(req.method)) added = "method";
        } else if (canonical !== req.method) {
          if (!aliases.some((a) => (a as { alias?: unknown })?.alias === req.method)) added = "alias";
        }
        const entry = {
          ...stored,
          methods: added === "method" ? [...methods, req.method] : methods,
          aliases: added === "alias" ? [...aliases, { alias: req.method, method: canonical }] : aliases,
          role: req.role,
          calls: (typeof stored.calls === "number" && Number.isFinite(stored.calls) ? stored.calls : 0) + n,
          createdAt: typeof stored.createdAt === "number" ? stored.createdAt : req.now,
          updatedAt: req.now,
        };
        // Writes.
        if (canonical === undefined) w.mapSet(toolForms, formKey, req.method);
        w.mapSet(tools, req.role, entry);
        return { status: "recorded" as const, added, entry: loadToolRoleEntry(req.role, copy(entry))! };
      });
    },

    async getToolRole(role: string): Promise<ToolRoleEntry | null> {
      checkToolName(role, "role");
      return tools.has(role) ? loadToolRoleEntry(role, copy(tools.get(role))) : null;
    },

    async listToolRoles(): Promise<ToolRoleEntry[]> {
      return [...tools.keys()].sort().flatMap((role) => loadToolRoleEntry(role, copy(tools.get(role))) ?? []);
    },

    async close() {},
  };

  importers.set(store, (rec) =>
    atomic(() => {
      if (agents.has(rec.head.agentId)) return "exists" as const;
      const r = copy(rec);
      const a: AgentRecords = {
        head: {
          ...r.head, leaseOwner: null, leaseUntil: 0, runnableAt: null, pendingTasks: 0, pendingMail: 0,
          messageCount: (r.messagesFrom ?? 0) + r.messages.length, lastEventId: (r.checkpoint?.eventId ?? 0) + r.events.length,
          eventsTrimmedThrough: r.checkpoint?.eventId ?? 0, messagesTrimmedThrough: r.checkpoint ? (r.messagesFrom ?? 0) : 0,
        },
        tasks: [],
        mail: [],
        mailSeq: 0,
        messages: r.messages,
        events: r.events,
        eventBytes: r.events.map((e) => utf8Length(JSON.stringify(e))),
        toolCalls: new Map(r.toolCalls.map((c) => [callKey(c.turnId, c.toolCallId), { ...c, agentId: r.head.agentId }])),
        idempotency: new Map(),
        turns: new Map(Object.entries(r.turns)),
        inputs: new Map(Object.entries(r.inputs)),
        verdicts: r.verdicts.map((v) => v.verdictId),
        claimFailures: null,
        ...freshRetention(),
        ...(r.checkpoint
          ? { ckpts: [{ mark: { eventId: r.checkpoint.eventId, bytes: 0, ended: 0, messageIndex: r.checkpoint.messageIndex }, at: r.checkpoint.at, snapshot: r.checkpoint.snapshot }] }
          : {}),
      };
      for (const v of r.verdicts) {
        if (verdicts.has(v.verdictId)) continue;
        w.mapSet(verdicts, v.verdictId, { agentId: r.head.agentId, turnId: v.turnId, status: v.status, json: v.json });
      }
      w.mapSet(agents, r.head.agentId, a);
      return "imported" as const;
    })
  );
  const state = (): MemoryStoreState => ({
    agents: [...agents.entries()].map(([id, a]) => [id, {
      ...a,
      toolCalls: [...a.toolCalls.entries()],
      idempotency: [...a.idempotency.entries()],
      turns: [...a.turns.entries()],
      inputs: [...a.inputs.entries()],
    }]),
    ready: [...ready.entries()].map(([t, m]) => [t, [...m.entries()]]),
    deadlines: [...deadlines.entries()],
    verdicts: [...verdicts.entries()],
    tools: [...tools.entries()],
    toolForms: [...toolForms.entries()],
    deleted: [...deleted.entries()],
  });
  Object.defineProperty(store, STATE, { value: state, enumerable: true });
  internals.set(store, {
    idempotencyEntries: (agentId) => agents.get(agentId)?.idempotency.size ?? 0,
    putRawToolEntry: (role, entry) => void tools.set(role, copy(entry)),
  });
  return store;
}
