/**
 * MemoryState: every map of one memory store, the journal that makes each
 * operation all or nothing (store invariant `all-or-nothing`), and the journaled writes
 * the operations share. The operations themselves are top-level functions
 * in the section files beside this one (turn-protocol.ts, reads.ts,
 * lifecycle.ts, side-stores.ts), each taking the state as its first
 * argument.
 *
 * Every write goes through `w` (or a helper built on it): it records how to
 * undo itself before it changes anything, and `atomic` undoes the journal in
 * reverse order when the operation throws. `faults` (tests only) is called
 * before every copy and every write.
 *
 * The members are arrow-function properties, so an operation may take the
 * ones it uses apart (`const { agents, atomic, w } = s`).
 */
import type { StoredEvent } from "../../common/events.ts";
import type { ScheduleRecord } from "../port.ts";
import { type AgentRecords, bellAt, type DeliveryRecord, laneOf, utf8Length } from "./records.ts";

export class MemoryState {
  readonly agents = new Map<string, AgentRecords>();
  /** workerTarget -> (agentId -> ready score) */
  readonly ready = new Map<string, Map<string, number>>();
  /** agentId -> (scheduleId -> record) (store/port.ts `Schedules`); the due time is the ready member `agentId\nscheduleId`. */
  readonly schedules = new Map<string, Map<string, ScheduleRecord>>();
  /**
   * `agentId\nscheduleId` -> the schedule's tasks enqueued since its newest task left the queue, and that
   * task (store/port.ts invariant `schedule-bounds`); dropped with the schedule.
   */
  readonly scheduleQueued = new Map<string, { count: number; turnId: string }>();
  /** "agentId\nturnId\ntoolCallId" -> deadline */
  readonly deadlines = new Map<string, number>();
  /** Calls waiting for a named event: "name\nagentId\nturnId\ntoolCallId" -> when recorded (invariant `named-event-waits`). */
  readonly waits = new Map<string, number>();
  /** Named events by id -> when each first arrived (ms); forgotten a day later. */
  readonly namedEvents = new Map<string, number>();
  readonly verdicts = new Map<string, { agentId: string; turnId: string; status: string; json: string }>();
  /** Transport dedup: messageId -> its record (see DeliveryResponse in port.ts). Admission bookkeeping, not agent state. */
  readonly deliveries = new Map<string, DeliveryRecord>();
  /** Deletion markers (store/port.ts invariant `deletion-marker`): agentId -> deletion time (ms). */
  readonly deleted = new Map<string, number>();
  /** Rate-limit buckets: key -> TAT (us). Admission bookkeeping, not agent state: memoryStoreState leaves it out. */
  readonly buckets = new Map<string, number>();
  /** Definition sets (invariant `definition-sets`): sorted agent names joined by "," -> last announced (ms). */
  readonly definitionSets = new Map<string, number>();
  /** Single-consumer target leases: target -> holder and until (ms). */
  readonly targetLeases = new Map<string, { holder: string; until: number }>();
  /** The tool registry: role -> entry (plain JSON), and `<role>\n<form>` -> the method first seen with that form. */
  readonly tools = new Map<string, unknown>();
  readonly toolForms = new Map<string, string>();
  /** Concurrency key -> (agentId -> lease end) of the leases running under it (invariant `concurrency-keys`). */
  readonly running = new Map<string, Map<string, number>>();
  /** agentId -> the key its lease runs under (the scripts' head field `_ckRun`). */
  readonly runKeys = new Map<string, string>();
  /** `<target>\n<lane>` -> the lane's not-before: last served, or parked until (invariant `fair-lanes`). */
  readonly laneNb = new Map<string, number>();
  readonly fault: (step: string) => void;

  constructor(faults?: (step: string) => void) {
    this.fault = faults ?? (() => {});
  }

  // ------------------------------------------------------------ journal

  #journal: Array<() => void> | null = null;

  #log = (undo: () => void) => {
    if (!this.#journal) throw new Error("memoryStore: write outside an operation");
    this.#journal.push(undo);
  };

  /** Runs one operation: all of it, or (on any exception) none of it. */
  readonly atomic = <T>(fn: () => T): T => {
    this.#journal = [];
    try {
      const r = fn();
      this.#journal = null;
      return r;
    } catch (err) {
      const undo = this.#journal ?? [];
      this.#journal = null;
      for (let i = undo.length - 1; i >= 0; i--) undo[i]();
      throw err;
    }
  };

  readonly copy = <T>(v: T): T => {
    this.fault("copy");
    return v === undefined ? v : JSON.parse(JSON.stringify(v));
  };

  /** Journaled writes: each records how to undo itself before it changes anything. */
  readonly w = journaledWrites((step) => this.fault(step), (undo) => this.#log(undo));

  // ------------------------------------------------------------ shared writes

  readonly readyOf = (target: string) => {
    let m = this.ready.get(target);
    if (!m) {
      m = new Map();
      this.w.mapSet(this.ready, target, m);
    }
    return m;
  };

  /** Rings a bell (only earlier); `dueNow`: for work due at once, written `priority` seconds earlier (invariant `priorities`). */
  readonly ring = (a: AgentRecords, score: number, dueNow = true) => {
    if (dueNow) score -= laneOf(a).prio * 1000;
    const q = this.readyOf(a.head.workerTarget);
    const cur = q.get(a.head.agentId);
    if (cur === undefined || score < cur) this.w.mapSet(q, a.head.agentId, score);
  };

  readonly setReady = (a: AgentRecords, score: number | null, dueNow = false) => {
    if (dueNow && score !== null) score -= laneOf(a).prio * 1000;
    const q = this.readyOf(a.head.workerTarget);
    if (score === null) this.w.mapDelete(q, a.head.agentId);
    else this.w.mapSet(q, a.head.agentId, score);
  };

  /** The bell of an agent with no lease: its next wakeup (`bellAt`), due work's ahead by its priority. */
  readonly restBell = (a: AgentRecords, now: number) => {
    const at = bellAt(a, now);
    this.setReady(a, at, at !== null && at <= now);
  };

  /** Builds an event from data already copied; the append itself cannot fail half-way. */
  readonly eventOf = (a: AgentRecords, offset: number, turnId: string | null, type: string, data: Record<string, unknown>, at: number) => {
    const e: StoredEvent = { id: a.head.lastEventId + offset, at, turnId, type, data };
    return { e, bytes: utf8Length(JSON.stringify(e)) };
  };

  readonly appendEvents = (a: AgentRecords, built: Array<{ e: StoredEvent; bytes: number }>) => {
    for (const b of built) {
      this.w.push(a.events, b.e);
      this.w.push(a.eventBytes, b.bytes);
    }
    if (built.length > 0) this.w.set(a.head, "lastEventId", a.head.lastEventId + built.length);
  };

  readonly liveDelivery = (messageId: string, now: number) => {
    const cur = this.deliveries.get(messageId);
    return cur !== undefined && cur.until > now ? cur : null;
  };

  /** Expired records go at the next new claim (a development store; Redis expires them itself). */
  readonly purgeDeliveries = (now: number) => {
    for (const [k, v] of this.deliveries) if (v.until <= now) this.deliveries.delete(k);
  };
}

/** The journaled writes over `fault` (called before each write) and `log` (takes the undo). */
function journaledWrites(fault: (step: string) => void, log: (undo: () => void) => void) {
  return {
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
}
