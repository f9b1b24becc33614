/**
 * The steps of the memory store's schedules that other operations share:
 * a schedule's due time in its ready queue, claimNext's visit of one, and
 * deleteAgent's removal of them all (store/port.ts `Schedules`).
 */
import type { ClaimNextRequest, ClaimResult, ScheduleRecord } from "../port.ts";
import type { MemoryState } from "./state.ts";
import { turnStatus } from "./records.ts";

const member = (agentId: string, scheduleId: string) => `${agentId}\n${scheduleId}`;

export function setScore(s: MemoryState, rec: ScheduleRecord, score: number | null): void {
  const q = s.readyOf(rec.workerTarget);
  if (score === null) s.w.mapDelete(q, member(rec.agentId, rec.scheduleId));
  else s.w.mapSet(q, member(rec.agentId, rec.scheduleId), score);
}

/** Removes a schedule's due time and its queued-task count (invariant `schedule-bounds`). */
export function dropSchedule(s: MemoryState, rec: ScheduleRecord): void {
  setScore(s, rec, null);
  s.w.mapDelete(s.scheduleQueued, member(rec.agentId, rec.scheduleId));
}

/** The task waits in the agent's inbox (not claimed, cancelled or removed). */
function stillQueued(s: MemoryState, agentId: string, turnId: string): boolean {
  const a = s.agents.get(agentId);
  return a !== undefined && turnStatus(a, turnId) === "queued";
}

/**
 * Invariant `schedule-bounds`, inside fireScheduleTick's operation: the newest
 * task of the schedule when it is still queued and `maxQueued` of its tasks
 * may be waiting (the tick is coalesced into it), else null.
 */
export function coalesceInto(s: MemoryState, rec: ScheduleRecord, maxQueued: number): string | null {
  const q = s.scheduleQueued.get(member(rec.agentId, rec.scheduleId));
  return q !== undefined && q.count >= maxQueued && stillQueued(s, rec.agentId, q.turnId) ? q.turnId : null;
}

/** Counts a task a fire enqueued (invariant `schedule-bounds`): one more when the newest is still queued, else the first. */
export function countQueued(s: MemoryState, rec: ScheduleRecord, turnId: string): void {
  const k = member(rec.agentId, rec.scheduleId);
  const q = s.scheduleQueued.get(k);
  const waiting = q !== undefined && stillQueued(s, rec.agentId, q.turnId);
  s.w.mapSet(s.scheduleQueued, k, { count: waiting ? q.count + 1 : 1, turnId });
}

/** Removes every schedule of an agent with its due times, inside deleteAgent's operation; true when it had any. */
export function dropSchedules(s: MemoryState, agentId: string): boolean {
  const mine = s.schedules.get(agentId);
  if (!mine) return false;
  for (const rec of mine.values()) dropSchedule(s, rec);
  s.w.mapDelete(s.schedules, agentId);
  return true;
}

/**
 * claimNext's visit of a schedule's due time: the record to fire, "foreign"
 * when another definition set's, null when the member was stale (removed or
 * moved to the record's own next tick).
 */
export function dueSchedule(s: MemoryState, q: Map<string, number>, m: string, req: ClaimNextRequest): ClaimResult | "foreign" | null {
  const nl = m.indexOf("\n");
  const rec = s.schedules.get(m.slice(0, nl))?.get(m.slice(nl + 1));
  if (!rec || rec.nextTick === null || rec.workerTarget !== req.workerTarget) {
    s.w.mapDelete(q, m);
    return null;
  }
  if (rec.nextTick > req.now) {
    s.w.mapSet(q, m, rec.nextTick);
    return null;
  }
  if (req.agentNames && !req.agentNames.includes(rec.agentName)) return "foreign";
  return { status: "schedule_due", schedule: s.copy(rec) };
}
