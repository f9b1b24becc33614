/**
 * The turn protocol of the memory store (store/port.ts `TurnProtocol`): tasks in, claims,
 * commits, mail, tool results, cancels, deadlines and the bell.
 * Each operation is a top-level function of the store's MemoryState;
 * store/memory.ts binds them to the store object.
 */
import { byField } from "../../common/by.ts";
import type { CancelRequest, CancelResult, CancelTaskRequest, CancelTaskResult, ClaimFailureRequest, ClaimFailureResult, ClaimNextRequest, ClaimRequest, ClaimResult, CommitRequest, CommitResult, DeliverToolResultRequest, DeliverToolResultResult, EnqueueTaskRequest, EnqueueTaskResult, RenewRequest, ResetTurnRequest, ResetTurnResult, SkipDueToolCallRequest, TurnProtocol } from "../port.ts";
import { answerResolved } from "../redelivery.ts";
import type { AgentHead, InboxTask, MailItem, ToolCallRecord } from "../types.ts";
import { inputBytes } from "../inputs.ts";
import { maxDelayedOf } from "../delayed-bound.ts";
import { checkAgentName, checkTurnId, checkVersion, StoreInputError, toolCalls } from "../keys.ts";
import { pinnedVersion } from "../types.ts";
import { notApplied } from "../../common/contract-validation.ts";
import type { Outcome } from "../../common/outcome.ts";
import { resolveRetention } from "../retention.ts";
import { bellAt, callKey, claimable, delayedCount, dueTask, freshAgent, int, leaseHeld, queueIndex, turnStatus } from "./records.ts";
import { claimStep, doClaim, prepareEndTurn, retain, takeLease } from "./turn-steps.ts";
import { dueLanes, laneFull, laneOf, nextLaneAt, parkLane, releaseRun, renewRun, serveLane } from "./lanes.ts";
import { limitsArg, taskLaneFields } from "../lanes.ts";
import type { MemoryState } from "./state.ts";
import { dueSchedule } from "./schedule-steps.ts";

/** The result type of the port method `K`. */
type Ret<K extends keyof TurnProtocol> = ReturnType<NonNullable<TurnProtocol[K]>>;

export async function enqueueTask(s: MemoryState, req: EnqueueTaskRequest): Promise<EnqueueTaskResult> {
  return s.atomic(() => enqueueInside(s, req));
}

/** The body of `enqueueTask`, inside an operation (`fireScheduleTick` runs it in its own, store/memory/schedules.ts). */
export function enqueueInside(s: MemoryState, req: EnqueueTaskRequest): EnqueueTaskResult {
  const { agents, deleted, copy, w, ring, eventOf, appendEvents } = s;
  // The body `enqueueTask` ran inside `atomic`, unchanged (its indentation kept).
  {
    if (req.refuseDeleted && deleted.has(req.agentId)) return { status: "agent_deleted", deletedAt: deleted.get(req.agentId)! };
    let a = agents.get(req.agentId);
    if (a && a.head.agentName !== req.agentName) {
      return { status: "definition_conflict", boundTo: a.head.agentName };
    }
    if (a && req.idempotencyKey !== undefined) {
      const prior = a.idempotency.get(req.idempotencyKey);
      if (prior !== undefined) return { status: "duplicate", turnId: prior };
    }
    // A delayed task (invariant `delayed-tasks`): a time already come is due at once.
    const runAt = req.runAt === undefined ? undefined : Math.max(int(req.runAt, "runAt"), req.now);
    const max = maxDelayedOf(req.maxDelayedTasks);
    if (runAt !== undefined && runAt > req.now && (a ? delayedCount(a.tasks, req.now) : 0) >= max) {
      return { status: "too_many_delayed", limit: max };
    }
    // Copies first: an input that cannot be copied throws before anything changed.
    const input = copy(req.input);
    const options = copy(req.options);
    const data = { turnId: req.turnId, options: copy(req.options), inputBytes: inputBytes(input), ...(runAt !== undefined ? { runAt } : {}) };
    const task: InboxTask = {
      turnId: req.turnId,
      options,
      enqueuedAt: req.now,
      ...(req.idempotencyKey !== undefined ? { idempotencyKey: req.idempotencyKey } : {}),
      ...(runAt !== undefined ? { runAt } : {}),
      ...taskLaneFields(req),
    };
    if (!a) a = freshAgent(req.agentId, req.agentName, req.workerTarget, req.now);
    const ev = eventOf(a, 1, req.turnId, "task_enqueued", data, req.now);
    // Writes.
    if (!agents.has(req.agentId)) w.mapSet(agents, req.agentId, a);
    // The task joins the queue at its join time (invariant `delayed-tasks`).
    const at = queueIndex(a.tasks, runAt ?? req.now);
    if (at === a.tasks.length) w.push(a.tasks, task);
    else w.set(a, "tasks", [...a.tasks.slice(0, at), task, ...a.tasks.slice(at)]);
    w.set(a.head, "pendingTasks", a.tasks.length);
    if (req.idempotencyKey !== undefined) w.mapSet(a.idempotency, req.idempotencyKey, req.turnId);
    w.mapSet(a.turns, req.turnId, "queued");
    w.mapSet(a.inputs, req.turnId, input);
    appendEvents(a, [ev]);
    ring(a, runAt ?? req.now, (runAt ?? req.now) <= req.now);
    return { status: "enqueued", turnId: req.turnId };
  }
}

/** The watchdog's timeout of a call waiting for a named event is the tool error `event_timeout` (invariant `named-event-waits`). */
function eventTimeout(rec: ToolCallRecord, req: DeliverToolResultRequest, outcome: Outcome): Outcome {
  if (req.source !== "watchdog" || rec.event === undefined || outcome.ok || outcome.error.type !== "timeout") return outcome;
  return { ...outcome, error: { ...outcome.error, type: "event_timeout" } };
}

export async function deliverToolResult(s: MemoryState, req: DeliverToolResultRequest): Promise<DeliverToolResultResult> {
  const { agents, deadlines, atomic, copy, w, ring, eventOf, appendEvents } = s;
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
    // Invariant `results-after-cancel`: the pending cancel of this turn would drop a result mailed after it.
    const outside = req.source !== "watchdog" && req.source !== "delegation";
    if (outside && a.mail.some((m) => m.kind === "cancel" && m.turnId === req.turnId)) return { status: "cancel_pending" };
    // Invariant `approval-before-result`: nothing resolves a call a person has not approved yet.
    if (rec.approval?.status === "pending") return { status: "approval_pending" };
    if (rec.approval && req.source === "watchdog" && rec.deadline > req.now) return { status: "not_due" };
    const outcome = eventTimeout(rec, req, copy(req.outcome));
    const contractValidation = copy(req.contractValidation ?? notApplied());
    const resolved: ToolCallRecord = {
      ...rec,
      status: "resolved",
      outcome,
      afterExecution: req.afterExecution,
      source: req.source,
      resolvedAt: req.now,
      contractValidation,
      ...byField(req.by),
    };
    const mail: MailItem = {
      kind: "tool_result",
      seq: a.mailSeq + 1,
      at: req.now,
      turnId: req.turnId,
      toolCallId: req.toolCallId,
      outcome: copy(outcome),
      afterExecution: req.afterExecution,
      source: req.source,
    };
    const ev = eventOf(a, 1, req.turnId, "tool_result_received", {
      toolCallId: req.toolCallId,
      ok: req.outcome.ok === true,
      source: req.source,
      afterExecution: req.afterExecution,
      contractValidation: copy(contractValidation),
      ...(req.event !== undefined ? { event: req.event } : {}),
      ...byField(req.by),
    }, req.now);
    const reply = copy(resolved);
    // Writes.
    w.mapSet(a.toolCalls, callKey(req.turnId, req.toolCallId), resolved);
    w.mapDelete(deadlines, `${req.agentId}\n${req.turnId}\n${req.toolCallId}`);
    if (rec.event !== undefined) w.mapDelete(s.waits, `${rec.event}\n${req.agentId}\n${req.turnId}\n${req.toolCallId}`);
    w.set(a, "mailSeq", mail.seq);
    w.push(a.mail, mail);
    w.set(a.head, "pendingMail", a.mail.length);
    appendEvents(a, [ev]);
    ring(a, req.now);
    return { status: "accepted", record: reply };
  });
}

export async function requestCancel(s: MemoryState, req: CancelRequest): Promise<CancelResult> {
  const { agents, atomic, w, ring, eventOf, appendEvents } = s;
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
    const ev = eventOf(a, 1, turnId, "cancel_requested", { reason, turnId, ...byField(req.by) }, req.now);
    // Writes.
    w.set(a, "mailSeq", mail.seq);
    w.push(a.mail, mail);
    w.set(a.head, "pendingMail", a.mail.length);
    appendEvents(a, [ev]);
    ring(a, req.now);
    return { status: "accepted", turnId };
  });
}

export async function cancelTask(s: MemoryState, req: CancelTaskRequest): Promise<CancelTaskResult> {
  const { agents, atomic, w, eventOf, appendEvents } = s;
  return atomic(() => {
    const a = agents.get(req.agentId);
    if (!a) return { status: "agent_not_found" };
    const st = turnStatus(a, req.turnId);
    if (st === null) return { status: "turn_not_found" };
    if (st === "active") return { status: "turn_started" };
    if (st === "cancelled") return { status: "cancelled", already: true };
    if (st !== "queued") return { status: "turn_finished" };
    const reason = String(req.reason);
    const ev = eventOf(a, 1, req.turnId, "task_cancelled", { turnId: req.turnId, reason, ...byField(req.by) }, req.now);
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
}

export async function claim(s: MemoryState, req: ClaimRequest): Promise<ClaimResult> {
  const { agents, atomic } = s;
  return atomic(() => {
    const a = agents.get(req.agentId);
    if (!a) return { status: "agent_not_found" };
    return doClaim(s, a, req);
  });
}

export async function claimNext(s: MemoryState, req: ClaimNextRequest): Promise<ClaimResult> {
  const { atomic, readyOf } = s;
  return atomic(() => {
    const q = readyOf(req.workerTarget);
    req.agentNames?.forEach(checkAgentName);
    limitsArg(req.concurrencyLimits);
    // Due lanes least recently served first (invariant `fair-lanes`); one lane alone: the bells oldest first.
    const lanes = dueLanes(s, q, req.workerTarget, req.now);
    const rotate = lanes.some((l) => l.lane !== "");
    let foreign = 0;
    for (const { lane, bells } of lanes) {
      const r = visitLane(s, q, bells, req);
      foreign += r.foreign;
      if (r.claim) {
        if (rotate && r.claim.status === "claimed") serveLane(s, req.workerTarget, lane, req.now);
        return r.claim;
      }
    }
    return foreign > 0 ? { status: "empty", foreign } : { status: "empty" };
  });
}

/** Visits one lane's due bells, oldest first: the claim (or due schedule) it found, and the agents of other names it left. */
function visitLane(s: MemoryState, q: Map<string, number>, bells: string[], req: ClaimNextRequest): { claim?: ClaimResult; foreign: number } {
  const { agents, w } = s;
  let foreign = 0;
  for (const agentId of bells) {
    // A schedule's due time (invariant `schedule-tick-once`): answered, never fired here.
    if (agentId.includes("\n")) {
      const r = dueSchedule(s, q, agentId, req);
      if (r === "foreign") foreign++;
      else if (r) return { claim: r, foreign };
      continue;
    }
    const a = agents.get(agentId);
    if (!a) {
      w.mapDelete(q, agentId);
      continue;
    }
    // Another deployment's agent (invariant `definition-sets`), or one whose turn is pinned to a version this caller
    // lacks (invariant `turn-versions`): left as it is, for a worker that has its definition.
    const lacks = (req.agentNames && !req.agentNames.includes(a.head.agentName)) || lacksVersion(a.head, req.agentNames ? req.agentVersions : undefined);
    if (lacks && !leaseHeld(a.head, req.now) && claimable(a, req.now)) {
      foreign++;
      continue;
    }
    const r = claimStep(s, a, req);
    // A lane at its key's limit is parked (invariant `concurrency-keys`): the next lane is visited.
    if (r.status === "limited") return { foreign };
    if (r.status === "claimed") return { claim: r, foreign };
    if (r.status === "busy") w.mapSet(q, agentId, r.leaseUntil);
  }
  return { foreign };
}

/** The agent's active turn is pinned to a version `versions` does not list for its name (invariant `turn-versions`). */
function lacksVersion(h: AgentHead, versions: ClaimNextRequest["agentVersions"]): boolean {
  if (!versions || !Object.hasOwn(versions, h.agentName)) return false;
  const pin = pinnedVersion(h);
  return pin !== null && !versions[h.agentName].includes(pin);
}

export async function renewLease(s: MemoryState, req: RenewRequest): Ret<"renewLease"> {
  const { agents, atomic, w, setReady } = s;
  return atomic(() => {
    const a = agents.get(req.agentId);
    if (!a) return { status: "lost" as const };
    const h = a.head;
    if (h.epoch !== req.epoch || h.leaseOwner !== req.workerId || h.leaseUntil <= req.now) {
      return { status: "lost" as const };
    }
    w.set(h, "leaseUntil", req.now + req.leaseMs);
    setReady(a, h.leaseUntil);
    renewRun(s, a, h.leaseUntil);
    return { status: "renewed" as const, leaseUntil: h.leaseUntil };
  });
}

export async function commit(s: MemoryState, req: CommitRequest): Promise<CommitResult> {
  // Long because a commit is one journaled step, mirroring store/lua/commit.lua check by check: the
  // fencing checks, then tool calls, resolutions, messages, events, mail, retention and chaining.
  const { agents, deadlines, atomic, copy, w, setReady, eventOf, appendEvents } = s;
  return atomic((): CommitResult => {
    // Long because it is the whole commit (see above), run inside the journal.
    const a = agents.get(req.agentId);
    if (!a) return { status: "conflict", reason: "agent_not_found" };
    const h = a.head;
    // All checks before the first write.
    if (req.turnVersion) {
      checkVersion(req.turnVersion.version);
      checkTurnId(req.turnVersion.turnId);
    }
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
        releaseRun(s, a, req.now);
        setReady(a, req.now, true);
        return { status: "conflict", reason: "tool_call_resolved" };
      }
    }
    if (req.stopAtCancel && a.mail.some((m) => m.kind === "cancel" && m.turnId === h.activeTurnId && m.seq > req.ackMailThrough)) {
      // A cancel of this turn waits (invariant `firm-cancels`): give the agent back at once so a claim applies it.
      w.set(h, "leaseOwner", null);
      w.set(h, "leaseUntil", 0);
      releaseRun(s, a, req.now);
      setReady(a, req.now, true);
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
      if (rec.event !== undefined) w.mapSet(s.waits, `${rec.event}\n${req.agentId}\n${rec.turnId}\n${rec.toolCallId}`, req.now);
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
      if (req.retention) retain(s, a, req.retention, snapshot, req.now);
    }
    w.set(h, "activeTurnId", req.activeTurnId);
    if (req.turnVersion) {
      // The turn's pin (invariant `turn-versions`).
      w.set(h, "turnVersion", req.turnVersion.version);
      w.set(h, "versionTurn", req.turnVersion.turnId);
    }
    // The ended turn's slot frees; a next task whose key is at its limit is not chained, its lane parked (invariant `concurrency-keys`).
    if (endsTurn) releaseRun(s, a, req.now);
    const full = req.chainNextTask && endsTurn ? laneFull(s, laneOf(a).lane, req.concurrencyLimits, req.now) : null;
    if (full !== null) parkLane(s, h.workerTarget, laneOf(a).lane, full);
    if (full === null && req.chainNextTask && endsTurn && req.release && a.mail.length === 0 && dueTask(a, req.now) !== null) {
      // Turn chaining (invariant `turn-chaining`): the next task is claimed by this very commit; the lease stays.
      const chained = takeLease(s, a, req, null, []);
      return { status: "applied", version: h.version, lastEventId: h.lastEventId, messagesTrimmedThrough: h.messagesTrimmedThrough, chained };
    }
    if (req.release) {
      w.set(h, "leaseOwner", null);
      w.set(h, "leaseUntil", 0);
      w.set(h, "runnableAt", req.release.runnableAt);
      releaseRun(s, a, req.now);
      s.restBell(a, req.now);
    } else {
      w.set(h, "runnableAt", req.now);
      w.set(h, "leaseUntil", req.now + req.leaseMs);
      setReady(a, h.leaseUntil);
      // The lease goes on: so does its slot (invariant `concurrency-keys`).
      renewRun(s, a, h.leaseUntil);
    }
    return { status: "applied", version: h.version, lastEventId: h.lastEventId, messagesTrimmedThrough: h.messagesTrimmedThrough };
  });
}

export async function recordClaimFailure(s: MemoryState, req: ClaimFailureRequest): Promise<ClaimFailureResult> {
  const { agents, atomic, w, setReady, eventOf, appendEvents } = s;
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
      releaseRun(s, a, req.now);
      setReady(a, retryAt);
      return { status: "retry", failures, retryAt };
    }
    const end = prepareEndTurn(s, a, req.end, req.now, [{
      type: "claim_failed",
      data: { attempt: failures, maxAttempts: max, error, workerId: req.workerId, retryAt: null },
    }]);
    return { status: "turn_failed", failures, version: end() };
  });
}

export async function resetTurn(s: MemoryState, req: ResetTurnRequest): Promise<ResetTurnResult> {
  const { agents, atomic, w } = s;
  return atomic((): ResetTurnResult => {
    const a = agents.get(req.agentId);
    if (!a) return { status: "agent_not_found" };
    const h = a.head;
    if (h.activeTurnId === null) return { status: "not_active" };
    if (h.version !== req.expectedVersion || h.activeTurnId !== req.turnId) return { status: "conflict" };
    const end = prepareEndTurn(s, a, req.end, req.now, []);
    // Writes. Fence out a worker that may still run the turn.
    w.set(h, "epoch", h.epoch + 1);
    const version = end();
    return { status: "reset", version, epoch: h.epoch };
  });
}

export async function dueToolCalls(s: MemoryState, now: number, limit: number): Ret<"dueToolCalls"> {
  const { deadlines } = s;
  return [...deadlines.entries()]
    .filter(([, d]) => d <= now)
    .sort((x, y) => x[1] - y[1])
    .slice(0, limit)
    .map(([k]) => {
      const [agentId, turnId, toolCallId] = k.split("\n");
      return { agentId, turnId, toolCallId };
    });
}

export async function skipDueToolCall(s: MemoryState, req: SkipDueToolCallRequest): Ret<"skipDueToolCall"> {
  const { agents, deadlines, atomic, w, eventOf, appendEvents } = s;
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
}

export async function nextReadyAt(s: MemoryState, workerTarget: string): Ret<"nextReadyAt"> {
  const { ready } = s;
  const q = ready.get(workerTarget);
  if (!q || q.size === 0) return null;
  // A lane parked at its limit counts at its place (invariant `fair-lanes`), as next_ready_at.lua reads it.
  return nextLaneAt(s, q, workerTarget);
}

export async function readyCount(s: MemoryState, workerTarget: string, now: number): Ret<"readyCount"> {
  const { ready } = s;
  let n = 0;
  for (const at of ready.get(workerTarget)?.values() ?? []) if (at <= now) n++;
  return n;
}
