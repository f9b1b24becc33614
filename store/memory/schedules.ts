/**
 * Schedules of the memory store (store/port.ts `Schedules`, invariants
 * `schedule-put` and `schedule-tick-once`). A schedule's due time is the
 * member `<agentId>\n<scheduleId>` of its target's ready queue (agent ids
 * hold no control characters, so no agent has that member). The schedule
 * index (invariant `schedule-index`) is the records themselves: a schedule
 * is in it while its `nextTick` is not null, so `nextDueSchedule` reads them
 * (a development store: a scan of its schedules).
 */
import { byField } from "../../common/by.ts";
import type { DeleteScheduleLog, FireScheduleTickRequest, FireScheduleTickResult, NextDueScheduleRequest, NextDueScheduleResult, PutScheduleRequest, PutScheduleResult, ScheduleRecord } from "../port.ts";
import { checkAgentId, checkAgentName, checkScheduleId, checkTarget, checkTurnId, positiveBound } from "../keys.ts";
import { int } from "./records.ts";
import { DEFAULTS } from "../../common/defaults.ts";
import type { MemoryState } from "./state.ts";
import { enqueueInside } from "./turn-protocol.ts";
import { coalesceInto, countQueued, dropSchedule, setScore } from "./schedule-steps.ts";



export async function putSchedule(s: MemoryState, req: PutScheduleRequest): Promise<PutScheduleResult> {
  checkAgentId(req.agentId);
  checkScheduleId(req.scheduleId);
  checkTarget(req.workerTarget);
  const now = int(req.now, "now");
  if (req.nextTick !== null) int(req.nextTick, "nextTick");
  if (req.expectRev !== undefined) int(req.expectRev, "expectRev");
  const limit = positiveBound(req.maxSchedules, "maxSchedules", DEFAULTS.maxSchedulesPerAgent);
  return s.atomic((): PutScheduleResult => {
    const a = s.agents.get(req.agentId);
    if (a && a.head.agentName !== req.agentName) return { status: "definition_conflict" as const, boundTo: a.head.agentName };
    let mine = s.schedules.get(req.agentId);
    const old = mine?.get(req.scheduleId);
    // Invariant `schedule-put`: a write over a revision applies only to that revision.
    if (req.expectRev !== undefined && old?.rev !== req.expectRev) return { status: "stale" };
    // Invariant `schedule-bounds`: a new schedule past the agent's bound is refused.
    if (!old && (mine?.size ?? 0) >= limit) return { status: "schedule_limit", limit };
    const spec = s.copy(req.spec);
    const rec: ScheduleRecord = {
      agentId: req.agentId, scheduleId: req.scheduleId, agentName: req.agentName, workerTarget: req.workerTarget, spec,
      nextTick: req.nextTick, rev: (old?.rev ?? 0) + 1, lastFired: old?.lastFired ?? null,
      createdAt: old?.createdAt ?? now, updatedAt: now, ...byField(req.by),
    };
    // Writes.
    if (!mine) s.w.mapSet(s.schedules, req.agentId, (mine = new Map()));
    if (old) setScore(s, old, null);
    s.w.mapSet(mine, req.scheduleId, rec);
    setScore(s, rec, rec.nextTick);
    return { status: old ? "replaced" as const : "created" as const, schedule: s.copy(rec) };
  });
}

export async function getSchedule(s: MemoryState, agentId: string, scheduleId: string): Promise<ScheduleRecord | null> {
  const rec = s.schedules.get(agentId)?.get(scheduleId);
  return rec ? s.copy(rec) : null;
}

export async function listSchedules(s: MemoryState, agentId: string): Promise<ScheduleRecord[]> {
  const mine = s.schedules.get(agentId);
  if (!mine) return [];
  return [...mine.keys()].sort().map((id) => s.copy(mine.get(id)!));
}

export async function deleteSchedule(
  s: MemoryState, agentId: string, scheduleId: string, log?: DeleteScheduleLog,
): Promise<{ status: "deleted" } | { status: "schedule_not_found" }> {
  if (log) int(log.now, "now");
  return s.atomic(() => {
    const mine = s.schedules.get(agentId);
    const rec = mine?.get(scheduleId);
    if (!mine || !rec) return { status: "schedule_not_found" as const };
    const a = log ? s.agents.get(agentId) : undefined;
    if (a && log) s.appendEvents(a, [s.eventOf(a, 1, null, "schedule_deleted", { scheduleId, by: log.by }, log.now)]);
    dropSchedule(s, rec);
    s.w.mapDelete(mine, scheduleId);
    if (mine.size === 0) s.w.mapDelete(s.schedules, agentId);
    return { status: "deleted" as const };
  });
}

export async function fireScheduleTick(s: MemoryState, req: FireScheduleTickRequest): Promise<FireScheduleTickResult> {
  checkTurnId(req.turnId);
  int(req.now, "now");
  if (req.nextTick !== null) int(req.nextTick, "nextTick");
  const maxQueued = positiveBound(req.maxQueued, "maxQueued", 1);
  return s.atomic((): FireScheduleTickResult => {
    const rec = s.schedules.get(req.agentId)?.get(req.scheduleId);
    if (!rec) return { status: "schedule_not_found" };
    if (rec.nextTick !== req.expectTick || rec.rev !== req.expectRev) return { status: "stale", nextTick: rec.nextTick };
    // Invariant `schedule-bounds`: the schedule's due time is no earlier than now (fair share).
    const score = req.nextTick === null ? null : Math.max(req.nextTick, req.now);
    const waiting = req.fireTick === null ? null : coalesceInto(s, rec, maxQueued);
    if (waiting !== null) {
      s.w.set(rec, "nextTick", req.nextTick);
      setScore(s, rec, score);
      return { status: "coalesced", turnId: waiting, nextTick: req.nextTick };
    }
    let enqueue = null;
    if (req.fireTick !== null) {
      enqueue = enqueueInside(s, {
        agentId: req.agentId, agentName: rec.agentName, workerTarget: rec.workerTarget, input: rec.spec.input,
        options: req.options, idempotencyKey: req.idempotencyKey, turnId: req.turnId, now: req.now,
        ...(req.concurrencyKey !== undefined ? { concurrencyKey: req.concurrencyKey } : {}),
        ...(req.priority !== undefined ? { priority: req.priority } : {}),
      });
      if (enqueue.status === "enqueued" || enqueue.status === "duplicate") {
        s.w.set(rec, "lastFired", { tick: req.fireTick, turnId: enqueue.turnId, at: req.now });
      }
      if (enqueue.status === "enqueued") countQueued(s, rec, enqueue.turnId);
    }
    s.w.set(rec, "nextTick", req.nextTick);
    setScore(s, rec, score);
    return enqueue ? { status: "fired", enqueue, nextTick: req.nextTick } : { status: "skipped", nextTick: req.nextTick };
  });
}

export async function nextDueSchedule(s: MemoryState, req: NextDueScheduleRequest): Promise<NextDueScheduleResult> {
  checkTarget(req.workerTarget);
  const now = int(req.now, "now");
  const names = req.agentNames && req.agentNames.length > 0 ? new Set(req.agentNames.map((n) => checkAgentName(n))) : null;
  let due: ScheduleRecord | null = null;
  let next: number | null = null;
  for (const mine of s.schedules.values()) {
    for (const rec of mine.values()) {
      if (rec.workerTarget !== req.workerTarget || rec.nextTick === null) continue;
      if (rec.nextTick > now) next = Math.min(next ?? Infinity, rec.nextTick);
      else if ((!names || names.has(rec.agentName)) && (!due || rec.nextTick < due.nextTick!)) due = rec;
    }
  }
  return due ? { status: "schedule_due", schedule: s.copy(due) } : { status: "none", next };
}
