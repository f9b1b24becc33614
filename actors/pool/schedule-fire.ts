/**
 * Firing a due schedule (store/port.ts invariant `schedule-tick-once`):
 * `claimNext` answered `schedule_due` with the record; this plans the step
 * from it (common/schedule.ts `planTick`: which tick fires, which is next,
 * by its `catchUp`) and asks the store to apply it in one atomic step. The
 * store applies it only if the record is still at the tick and revision
 * planned from, so any number of workers may find the same schedule due:
 * one step applies, the others answer `stale`. A worker that stops at any
 * point leaves the tick either unfired (the next worker fires it) or fired
 * once. The tick's task is an ordinary task under the idempotency key
 * `schedule:<scheduleId>:<tick ISO time>`.
 *
 * Bounds (store invariant `schedule-bounds`): the step allows
 * `queuedTicksCap(spec)` of the schedule's tasks to wait at once; a tick
 * beyond is coalesced into the waiting task by the store, logged
 * `schedule_coalesced` and counted in `/metrics`.
 *
 * A stored timing that no longer parses (it was checked when written) ends
 * the schedule (next tick null) rather than keep it due.
 */
import type { FireScheduleTickResult, ScheduleRecord, Store } from "../../store/port.ts";
import { planTick, queuedTicksCap, scheduleKey } from "../../common/schedule.ts";
import type { Clock, Logger } from "../runtime.ts";

export interface ScheduleFireDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
}

/** Applies one step of a due schedule, its task under `turnId` (the runtime's ids); answers the store's result (null: the record has no tick). */
export async function fireDueSchedule(deps: ScheduleFireDeps, rec: ScheduleRecord, turnId: string): Promise<FireScheduleTickResult | null> {
  if (rec.nextTick === null) return null;
  const now = deps.clock.now();
  let plan: { fire: number | null; next: number | null };
  try {
    plan = planTick(rec.spec, rec.nextTick, now);
  } catch (err) {
    deps.logger.warn("schedule timing unreadable: schedule ended", { agentId: rec.agentId, scheduleId: rec.scheduleId, error: String(err) });
    plan = { fire: null, next: null };
  }
  const r = await deps.store.fireScheduleTick({
    agentId: rec.agentId, scheduleId: rec.scheduleId, expectTick: rec.nextTick, expectRev: rec.rev,
    fireTick: plan.fire, nextTick: plan.next, turnId,
    idempotencyKey: plan.fire === null ? "" : scheduleKey(rec.scheduleId, plan.fire), options: {}, input: rec.spec.input, now,
    maxQueued: queuedTicksCap(rec.spec),
  });
  if (r.status === "fired") {
    const e = r.enqueue;
    deps.logger.info("schedule_fired", {
      agentId: rec.agentId, scheduleId: rec.scheduleId, tick: plan.fire, status: e.status,
      ...(e.status === "enqueued" || e.status === "duplicate" ? { turnId: e.turnId } : {}), nextTick: r.nextTick,
    });
  } else if (r.status === "coalesced") {
    deps.logger.info("schedule_coalesced", {
      agentId: rec.agentId, scheduleId: rec.scheduleId, tick: plan.fire, waitingTurnId: r.turnId, nextTick: r.nextTick,
    });
  } else if (r.status === "skipped") {
    deps.logger.info("schedule_skipped", { agentId: rec.agentId, scheduleId: rec.scheduleId, missedFrom: rec.nextTick, nextTick: r.nextTick });
  }
  return r;
}
