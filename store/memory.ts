/**
 * memoryStore(): the embedded default store. Each method does all its checks
 * and writes synchronously (no await in between), which makes it as atomic as
 * a Lua script on one Redis. Records are deep-copied in and out so callers
 * can never mutate stored state. It implements the contract of store/port.ts
 * independently of the Lua scripts in store/lua/ (used by the Redis
 * adapters); tests/store-conformance.ts runs the same cases on both, which is
 * what keeps them alike.
 */
import type {
  CancelRequest,
  CancelResult,
  ClaimNextRequest,
  ClaimRequest,
  ClaimResult,
  CommitRequest,
  CommitResult,
  DeliverToolResultRequest,
  DeliverToolResultResult,
  EnqueueTaskRequest,
  EnqueueTaskResult,
  RenewRequest,
  Store,
  VerdictFilter,
  VerdictPut,
} from "./port.ts";
import type { StoredEvent } from "../common/events.ts";
import type { Message } from "../common/message.ts";
import { normalizeRecord } from "./spelling.ts";
import type { AgentHead, InboxTask, MailItem, ToolCallRecord } from "./types.ts";
import { jsonClone } from "../common/json.ts";

interface AgentRecords {
  head: AgentHead;
  tasks: InboxTask[];
  mail: MailItem[];
  mailSeq: number;
  messages: Message[];
  events: StoredEvent[];
  toolCalls: Map<string, ToolCallRecord>; // key: turnId + "\n" + toolCallId
  idempotency: Map<string, string>; // key -> turnId
  verdicts: string[]; // verdict ids, append-only
}

const clone = jsonClone;

/**
 * Every stored record of one memory store, as plain data (maps become arrays
 * of entries in insertion order). For tests that compare the whole stored
 * state before and after an operation; not part of the Store port, and no
 * other code reads it.
 */
export interface MemoryStoreDump {
  agents: Array<[agentId: string, records: {
    head: AgentHead;
    tasks: InboxTask[];
    mail: MailItem[];
    mailSeq: number;
    messages: Message[];
    events: StoredEvent[];
    toolCalls: Array<[key: string, record: ToolCallRecord]>;
    idempotency: Array<[key: string, turnId: string]>;
    verdicts: string[];
  }]>;
  /** workerTarget -> [agentId, ready score] entries. */
  ready: Array<[target: string, entries: Array<[agentId: string, score: number]>]>;
  /** ["agentId\nturnId\ntoolCallId", deadline] entries. */
  deadlines: Array<[member: string, deadline: number]>;
  verdicts: Array<[verdictId: string, record: { agentId: string; turnId: string; status: string; json: string }]>;
}

/**
 * The key under which a memory store carries its dump function. A symbol
 * (so it is no method of the Store port) and enumerable (so a wrapper built
 * with `{ ...store }` keeps it). Read it with `dumpMemoryStore`.
 */
const DUMP = Symbol.for("gatehouse.memoryStore.dump");

/** A deep copy of every record of a memory store (see MemoryStoreDump); throws for any other store. */
export function dumpMemoryStore(store: Store): MemoryStoreDump {
  const dump = (store as unknown as Record<symbol, (() => MemoryStoreDump) | undefined>)[DUMP];
  if (typeof dump !== "function") throw new TypeError(`dumpMemoryStore needs a memoryStore(), got a "${store.kind}" store`);
  return dump();
}
const callKey = (turnId: string, toolCallId: string) => `${turnId}\n${toolCallId}`;

/** Creates the in-process store. Nothing survives the process. */
export function memoryStore(): Store {
  const agents = new Map<string, AgentRecords>();
  /** workerTarget -> (agentId -> ready score) */
  const ready = new Map<string, Map<string, number>>();
  /** "agentId\nturnId\ntoolCallId" -> deadline */
  const deadlines = new Map<string, number>();
  const verdicts = new Map<string, { agentId: string; turnId: string; status: string; json: string }>();

  const readyOf = (target: string) => {
    let m = ready.get(target);
    if (!m) ready.set(target, (m = new Map()));
    return m;
  };
  const ring = (a: AgentRecords, score: number) => {
    const q = readyOf(a.head.workerTarget);
    const cur = q.get(a.head.agentId);
    if (cur === undefined || score < cur) q.set(a.head.agentId, score);
  };
  const setReady = (a: AgentRecords, score: number | null) => {
    const q = readyOf(a.head.workerTarget);
    if (score === null) q.delete(a.head.agentId);
    else q.set(a.head.agentId, score);
  };
  const appendEvent = (a: AgentRecords, turnId: string | null, type: string, data: Record<string, unknown>, at: number) => {
    const id = ++a.head.lastEventId;
    a.events.push({ id, at, turnId, type, data: clone(data) });
    return id;
  };
  const leaseHeld = (h: AgentHead, now: number) => h.leaseOwner !== null && h.leaseUntil > now;
  /** What a claim would take now; mirrors store/lua/claim.lua. */
  const claimable = (a: AgentRecords, now: number) =>
    a.mail.length > 0 ||
    (a.head.activeTurnId === null && a.tasks.length > 0) ||
    (a.head.runnableAt !== null && a.head.runnableAt <= now);

  function doClaim(a: AgentRecords, req: { workerId: string; leaseMs: number; now: number }): ClaimResult {
    const h = a.head;
    if (leaseHeld(h, req.now)) return { status: "busy", agentId: h.agentId, leaseUntil: h.leaseUntil };
    if (!claimable(a, req.now)) {
      // A bell with nothing behind it: forget the bell, keep a future wakeup.
      setReady(a, h.runnableAt);
      return { status: "empty", agentId: h.agentId };
    }
    if (h.activeTurnId === null && a.tasks.length > 0) {
      const task = a.tasks.shift()!;
      h.activeTurnId = task.turnId;
      h.currentTask = task;
      h.pendingTasks = a.tasks.length;
      h.runnableAt = req.now;
    }
    h.epoch += 1;
    h.leaseOwner = req.workerId;
    h.leaseUntil = req.now + req.leaseMs;
    h.updatedAt = req.now;
    setReady(a, h.leaseUntil);
    return {
      status: "claimed",
      agentId: h.agentId,
      epoch: h.epoch,
      head: clone(h),
      task: clone(h.currentTask),
      mail: clone(a.mail),
    };
  }

  const store: Store = {
    kind: "memory",

    async enqueueTask(req: EnqueueTaskRequest): Promise<EnqueueTaskResult> {
      let a = agents.get(req.agentId);
      if (a && a.head.agentName !== req.agentName) {
        return { status: "definition_conflict", boundTo: a.head.agentName };
      }
      if (a && req.idempotencyKey !== undefined) {
        const prior = a.idempotency.get(req.idempotencyKey);
        if (prior !== undefined) return { status: "duplicate", turnId: prior };
      }
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
          },
          tasks: [],
          mail: [],
          mailSeq: 0,
          messages: [],
          events: [],
          toolCalls: new Map(),
          idempotency: new Map(),
          verdicts: [],
        };
        agents.set(req.agentId, a);
      }
      const task: InboxTask = {
        turnId: req.turnId,
        input: clone(req.input),
        options: clone(req.options),
        enqueuedAt: req.now,
        ...(req.idempotencyKey !== undefined ? { idempotencyKey: req.idempotencyKey } : {}),
      };
      a.tasks.push(task);
      a.head.pendingTasks = a.tasks.length;
      if (req.idempotencyKey !== undefined) a.idempotency.set(req.idempotencyKey, req.turnId);
      appendEvent(a, req.turnId, "task_enqueued", { turnId: req.turnId, input: req.input, options: req.options }, req.now);
      ring(a, req.now);
      return { status: "enqueued", turnId: req.turnId };
    },

    async deliverToolResult(req: DeliverToolResultRequest): Promise<DeliverToolResultResult> {
      const a = agents.get(req.agentId);
      if (!a) return { status: "agent_not_found" };
      const rec = a.toolCalls.get(callKey(req.turnId, req.toolCallId));
      if (!rec) return { status: "unknown_call" };
      if (rec.status === "resolved") return { status: "duplicate", record: clone(rec) };
      if (a.head.activeTurnId !== req.turnId) return { status: "turn_finished" };
      rec.status = "resolved";
      rec.outcome = clone(req.outcome);
      rec.afterExecution = req.afterExecution;
      rec.source = req.source;
      rec.resolvedAt = req.now;
      deadlines.delete(`${req.agentId}\n${req.turnId}\n${req.toolCallId}`);
      a.mail.push({
        kind: "tool_result",
        seq: ++a.mailSeq,
        at: req.now,
        turnId: req.turnId,
        toolCallId: req.toolCallId,
        outcome: clone(req.outcome),
        afterExecution: req.afterExecution,
        source: req.source,
      });
      a.head.pendingMail = a.mail.length;
      appendEvent(a, req.turnId, "tool_result_received", {
        toolCallId: req.toolCallId,
        ok: req.outcome.ok,
        source: req.source,
        afterExecution: req.afterExecution,
      }, req.now);
      ring(a, req.now);
      return { status: "accepted", record: clone(rec) };
    },

    async requestCancel(req: CancelRequest): Promise<CancelResult> {
      const a = agents.get(req.agentId);
      if (!a) return { status: "agent_not_found" };
      if (a.head.activeTurnId === null) return { status: "not_active" };
      a.mail.push({ kind: "cancel", seq: ++a.mailSeq, at: req.now, reason: req.reason });
      a.head.pendingMail = a.mail.length;
      appendEvent(a, a.head.activeTurnId, "cancel_requested", { reason: req.reason }, req.now);
      ring(a, req.now);
      return { status: "accepted" };
    },

    async claim(req: ClaimRequest): Promise<ClaimResult> {
      const a = agents.get(req.agentId);
      if (!a) return { status: "agent_not_found" };
      return doClaim(a, req);
    },

    async claimNext(req: ClaimNextRequest): Promise<ClaimResult> {
      const q = readyOf(req.workerTarget);
      // Oldest due bell first; skip (and re-score) bells of agents that are busy or empty.
      const due = [...q.entries()].filter(([, s]) => s <= req.now).sort((x, y) => x[1] - y[1]);
      for (const [agentId] of due) {
        const a = agents.get(agentId);
        if (!a) {
          q.delete(agentId);
          continue;
        }
        const r = doClaim(a, req);
        if (r.status === "claimed") return r;
        if (r.status === "busy") q.set(agentId, r.leaseUntil);
      }
      return { status: "empty" };
    },

    async renewLease(req: RenewRequest) {
      const a = agents.get(req.agentId);
      if (!a) return { status: "lost" as const };
      const h = a.head;
      if (h.epoch !== req.epoch || h.leaseOwner !== req.workerId || h.leaseUntil <= req.now) {
        return { status: "lost" as const };
      }
      h.leaseUntil = req.now + req.leaseMs;
      setReady(a, h.leaseUntil);
      return { status: "renewed" as const, leaseUntil: h.leaseUntil };
    },

    async commit(req: CommitRequest): Promise<CommitResult> {
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
          h.leaseOwner = null;
          h.leaseUntil = 0;
          setReady(a, req.now);
          return { status: "conflict", reason: "tool_call_resolved" };
        }
      }
      // Writes.
      for (const c of req.recordToolCalls) {
        const rec: ToolCallRecord = {
          ...clone(c),
          agentId: req.agentId,
          status: "pending",
          recordedAt: req.now,
        };
        a.toolCalls.set(callKey(c.turnId, c.toolCallId), rec);
        deadlines.set(`${req.agentId}\n${c.turnId}\n${c.toolCallId}`, c.deadline);
      }
      for (const r of req.resolveToolCalls) {
        const rec = a.toolCalls.get(callKey(req.turnId ?? "", r.toolCallId))!;
        rec.status = "resolved";
        rec.outcome = clone(r.outcome);
        rec.afterExecution = r.afterExecution;
        rec.source = "inline";
        rec.resolvedAt = req.now;
        deadlines.delete(`${req.agentId}\n${req.turnId}\n${r.toolCallId}`);
      }
      if (req.ackMailThrough > 0) a.mail = a.mail.filter((m) => m.seq > req.ackMailThrough);
      for (const m of req.messages) a.messages.push(clone(m));
      for (const e of req.events) appendEvent(a, req.turnId ?? req.activeTurnId, e.type, e.data, req.now);
      h.snapshot = clone(req.snapshot);
      h.state = req.state;
      h.version += 1;
      h.updatedAt = req.now;
      h.messageCount = a.messages.length;
      h.pendingMail = a.mail.length;
      if (req.activeTurnId === null && h.activeTurnId !== null) {
        // The turn ended: its unresolved calls can no longer be answered.
        for (const [k, rec] of a.toolCalls) {
          if (rec.turnId === h.activeTurnId && rec.status === "pending") {
            deadlines.delete(`${req.agentId}\n${rec.turnId}\n${rec.toolCallId}`);
          }
          void k;
        }
        h.currentTask = null;
      }
      h.activeTurnId = req.activeTurnId;
      if (req.release) {
        h.leaseOwner = null;
        h.leaseUntil = 0;
        h.runnableAt = req.release.runnableAt;
        if (claimable(a, req.now)) setReady(a, req.now);
        else setReady(a, h.runnableAt);
      } else {
        h.runnableAt = req.now;
        h.leaseUntil = req.now + req.leaseMs;
        setReady(a, h.leaseUntil);
      }
      return { status: "applied", version: h.version, lastEventId: h.lastEventId };
    },

    async getAgent(agentId) {
      const a = agents.get(agentId);
      return a ? clone(a.head) : null;
    },

    async getToolCalls(agentId, turnId) {
      const a = agents.get(agentId);
      if (!a) return [];
      return [...a.toolCalls.values()].filter((r) => r.turnId === turnId).map((r) => normalizeRecord(clone(r)));
    },

    async readMessages(agentId, fromIndex = 0) {
      const a = agents.get(agentId);
      return a ? clone(a.messages.slice(fromIndex)) : [];
    },

    async readEvents(agentId, after, limit) {
      const a = agents.get(agentId);
      if (!a) return [];
      // Ids are dense (1..n), so the event with id k sits at index k-1.
      return clone(a.events.slice(Math.max(0, after), Math.max(0, after) + limit));
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

    async nextReadyAt(workerTarget) {
      const q = ready.get(workerTarget);
      if (!q || q.size === 0) return null;
      return Math.min(...q.values());
    },

    async putVerdict(req: VerdictPut) {
      if (verdicts.has(req.verdictId)) return { status: "exists" as const };
      const a = agents.get(req.agentId);
      verdicts.set(req.verdictId, { agentId: req.agentId, turnId: req.turnId, status: req.status, json: req.json });
      a?.verdicts.push(req.verdictId);
      return { status: "written" as const };
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

    async close() {},
  };
  const dump = (): MemoryStoreDump => clone({
    agents: [...agents].map(([id, a]) => [id, {
      ...a,
      toolCalls: [...a.toolCalls],
      idempotency: [...a.idempotency],
    }]),
    ready: [...ready].map(([target, q]) => [target, [...q]]),
    deadlines: [...deadlines],
    verdicts: [...verdicts],
  });
  Object.defineProperty(store, DUMP, { value: dump, enumerable: true });
  return store;
}
