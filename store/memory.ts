/**
 * memoryStore(): the embedded default store. Each method does all its checks
 * and writes synchronously (no await in between), which makes it as atomic as
 * a Lua script on one Redis. Records are deep-copied in and out so callers
 * can never mutate stored state. It implements the contract of store/port.ts
 * independently of the Lua scripts in store/lua/ (used by the Redis
 * adapters); tests/store/store-conformance.ts runs the same cases on both, which is
 * what keeps them alike.
 *
 * All or nothing (store/port.ts, invariant `all-or-nothing`): every operation first copies
 * and checks its inputs (a value that cannot be copied, a nesting too deep for
 * JSON, throws here, before anything changed), then writes. Every write goes
 * through the journal of the running operation (`w.*`), and an exception at
 * any point, a copy or a write, undoes the journal in reverse order, so the
 * store is left exactly as it was and event ids stay dense. `faults` (tests
 * only) is called before every copy and every write, so a test can throw at
 * each step of each operation and compare the whole state before and after
 * (`memoryStoreState`).
 *
 * Where things are: store/memory/state.ts holds the maps, the journal
 * (`atomic`, `w`) and the shared writes (MemoryState); the operations are
 * top-level functions of that state, one file per section of the port
 * (memory/turn-protocol.ts, memory/reads.ts, memory/lifecycle.ts,
 * memory/side-stores.ts), with the steps several of them share in
 * memory/turn-steps.ts and the agent's records in memory/records.ts. This
 * file binds them into the store object and keeps the test hooks.
 */
import type { Checkpoint, Store, TurnStatus } from "./port.ts";
import type { StoredEvent } from "../common/events.ts";
import type { Message } from "../common/message.ts";
import type { AgentHead, ToolCallRecord } from "./types.ts";
import { type AgentRecords, callKey, freshRetention, utf8Length } from "./memory/records.ts";
import { MemoryState } from "./memory/state.ts";
import * as turnProtocol from "./memory/turn-protocol.ts";
import * as reads from "./memory/reads.ts";
import * as lifecycle from "./memory/lifecycle.ts";
import * as sideStores from "./memory/side-stores.ts";
import * as approvals from "./memory/approvals.ts";
import * as namedEvents from "./memory/named-events.ts";
import * as schedules from "./memory/schedules.ts";
import * as enqueueClaim from "./memory/enqueue-claim.ts";
import { processLive } from "./live.ts";
import { wellFormedValue } from "../common/well-formed.ts";

export { utf8Length };

export interface MemoryStoreOptions {
  /**
   * Tests only: called with the name of each step (`copy`, `write`) before it
   * runs; a throw there aborts the operation, which must then leave the store
   * as it was.
   */
  faults?: (step: string) => void;
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
  /** Deletion markers (store/port.ts invariant `deletion-marker`): agentId -> deletion time (ms). */
  deleted: Array<[agentId: string, at: number]>;
  /** Recurring schedules (store/port.ts `Schedules`): agentId -> [scheduleId, record] entries. */
  schedules: Array<[agentId: string, entries: Array<[scheduleId: string, record: unknown]>]>;
}

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

const importers = new WeakMap<Store, (rec: ImportedAgent) => "imported" | "exists">();

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
  /** Idempotency entries kept for an agent (store/port.ts invariant `idempotency-entry-with-key`). */
  idempotencyEntries(agentId: string): number;
  /** Stores a tool registry entry as given (tests of entries written by older versions). */
  putRawToolEntry(role: string, entry: unknown): void;
  /** Drops the events with id <= `through` and records them as trimmed, bypassing retention (which never cuts within a commit). */
  cutEvents(agentId: string, through: number): void;
}

const internals = new WeakMap<Store, MemoryStoreInternals>();

/** The internals of a memory store (undefined for any other store). */
export function memoryStoreInternals(store: Store): MemoryStoreInternals | undefined {
  return internals.get(store);
}

/** The operations of a section (functions of the state first), bound to one state. */
type Bound<M> = { [K in keyof M]: M[K] extends (s: MemoryState, ...args: infer A) => infer R ? (...args: A) => R : never };

function bind<M extends Record<string, (s: MemoryState, ...args: never[]) => unknown>>(s: MemoryState, ops: M): Bound<M> {
  const out: Record<string, unknown> = {};
  // Every argument well-formed (store/port.ts invariant `well-formed-text`): what the script store sends Redis.
  for (const [name, fn] of Object.entries(ops)) out[name] = (...args: never[]) => fn(s, ...(args.map(wellFormedValue) as never[]));
  return out as Bound<M>;
}

// enqueueInside is a step of fireScheduleTick (store/memory/schedules.ts), not an operation.
const { enqueueInside: _enqueueInside, ...turnOps } = turnProtocol;

/** Creates the in-process store. Nothing survives the process. */
export function memoryStore(opts: MemoryStoreOptions = {}): Store {
  const s = new MemoryState(opts.faults);
  const store: Store = {
    kind: "memory",
    // One process holds the whole store: the in-process channel reaches every reader.
    live: processLive(),
    ...bind(s, turnOps),
    ...bind(s, reads),
    ...bind(s, lifecycle),
    ...bind(s, sideStores),
    ...bind(s, approvals),
    ...bind(s, namedEvents),
    ...bind(s, schedules),
    ...bind(s, enqueueClaim),
  };
  importers.set(store, (rec) => importAgent(s, rec));
  Object.defineProperty(store, STATE, { value: () => stateOf(s), enumerable: true });
  internals.set(store, {
    idempotencyEntries: (agentId) => s.agents.get(agentId)?.idempotency.size ?? 0,
    putRawToolEntry: (role, entry) => void s.tools.set(role, s.copy(entry)),
    cutEvents: (agentId, through) => {
      const a = s.agents.get(agentId);
      if (!a || through <= a.head.eventsTrimmedThrough) return;
      a.events.splice(0, through - a.head.eventsTrimmedThrough);
      a.eventBytes.splice(0, through - a.head.eventsTrimmedThrough);
      a.head.eventsTrimmedThrough = through;
    },
  });
  return store;
}

/** memoryStoreImport of one store. */
function importAgent(s: MemoryState, rec: ImportedAgent): "imported" | "exists" {
  const { agents, verdicts, atomic, copy, w } = s;
  return atomic(() => {
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
  });
}

/** memoryStoreState of one store. */
function stateOf(s: MemoryState): MemoryStoreState {
  const { agents, ready, deadlines, verdicts, tools, toolForms, deleted, schedules } = s;
  return {
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
    schedules: [...schedules.entries()].map(([id, m]) => [id, [...m.entries()].map(([k, r]) => [k, structuredClone(r)])]),
  };
}
