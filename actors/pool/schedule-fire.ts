/**
 * Firing a due schedule (store/port.ts invariant `schedule-tick-once`):
 * `nextDueSchedule` (the tick firer, actors/pool/tick-firer.ts) or
 * `claimNext` answered the record as due; this plans the step from it
 * (common/schedule.ts `planTick`: which tick fires, which is next; ticks at
 * or after `liveFrom`, the time since which this process has been up to
 * fire, are fired each, `catchUp` decides the ones before) and asks the
 * store to apply it in one atomic step. The
 * store applies it only if the record is still at the tick and revision
 * planned from, so any number of workers may find the same schedule due:
 * one step applies, the others answer `stale`. A worker that stops at any
 * point leaves the tick either unfired (the next worker fires it) or fired
 * once. The tick's task is an ordinary task under the idempotency key
 * `schedule:<scheduleId>:<tick ISO time>`, with the schedule's task options
 * (`spec.options`). A paused schedule has no next tick, so it is never due.
 *
 * Every step that skips ticks, once applied, logs `schedule_skipped`
 * (agentId, scheduleId, `from` and `to`: the first and last tick skipped as
 * ISO times, `count`, `capped` when a cron's count stopped at its bound,
 * `nextTick`) and adds `count` to `gatehouse_schedule_ticks_skipped_total`;
 * a step that enqueued its tick's task adds one to
 * `gatehouse_schedule_ticks_fired_total` (docs/operations.md).
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
import { planTick, queuedTicksCap, scheduleKey, skippedTicks } from "../../common/schedule.ts";
import type { Clock, Logger } from "../runtime.ts";

export interface ScheduleFireDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** The process metrics (actors/observe/metrics.ts): the two schedule counters. */
  metrics?: { scheduleTickFired(): void; scheduleTicksSkipped(count: number): void };
}

/**
 * Applies one step of a due schedule, its task under `turnId` (the runtime's
 * ids); `liveFrom`: since when this process has been up to fire (absent: no
 * tick counts as seen live, `catchUp` decides them all). Answers the store's
 * result (null: the record has no tick).
 */
export async function fireDueSchedule(deps: ScheduleFireDeps, rec: ScheduleRecord, turnId: string, liveFrom?: number): Promise<FireScheduleTickResult | null> {
  if (rec.nextTick === null) return null;
  const now = deps.clock.now();
  let plan: { fire: number | null; next: number | null };
  try {
    plan = planTick(rec.spec, rec.nextTick, now, liveFrom);
  } catch (err) {
    deps.logger.warn("schedule timing unreadable: schedule ended", { agentId: rec.agentId, scheduleId: rec.scheduleId, error: String(err) });
    plan = { fire: null, next: null };
  }
  const r = await deps.store.fireScheduleTick({
    agentId: rec.agentId, scheduleId: rec.scheduleId, expectTick: rec.nextTick, expectRev: rec.rev,
    fireTick: plan.fire, nextTick: plan.next, turnId,
    idempotencyKey: plan.fire === null ? "" : scheduleKey(rec.scheduleId, plan.fire), options: rec.spec.options ?? {}, input: rec.spec.input, now,
    maxQueued: queuedTicksCap(rec.spec),
    ...scheduleLane(rec),
  });
  if (r.status === "fired" || r.status === "skipped" || r.status === "coalesced") reportStep(deps, rec, plan, r, now);
  if (r.status === "coalesced") {
    deps.logger.info("schedule_coalesced", {
      agentId: rec.agentId, scheduleId: rec.scheduleId, tick: plan.fire, waitingTurnId: r.turnId, nextTick: r.nextTick,
    });
  }
  return r;
}

/** The lines and counters of an applied step. */
function reportStep(deps: ScheduleFireDeps, rec: ScheduleRecord, plan: { fire: number | null; next: number | null }, r: FireScheduleTickResult, now: number): void {
  let skipped: ReturnType<typeof skippedTicks> = null;
  try {
    skipped = skippedTicks(rec.spec, rec.nextTick!, plan, now);
  } catch { /* an unreadable timing was reported above */ }
  if (skipped) {
    deps.metrics?.scheduleTicksSkipped(skipped.count);
    deps.logger.info("schedule_skipped", {
      agentId: rec.agentId, scheduleId: rec.scheduleId, from: new Date(skipped.from).toISOString(), to: new Date(skipped.to).toISOString(),
      count: skipped.count, ...(skipped.capped ? { capped: true } : {}), catchUp: rec.spec.catchUp, nextTick: plan.next,
    });
  }
  if (r.status !== "fired") return;
  const e = r.enqueue;
  if (e.status === "enqueued") deps.metrics?.scheduleTickFired();
  deps.logger.info("schedule_fired", {
    agentId: rec.agentId, scheduleId: rec.scheduleId, tick: plan.fire, status: e.status,
    ...(e.status === "enqueued" || e.status === "duplicate" ? { turnId: e.turnId } : {}), nextTick: r.nextTick,
  });
}

/**
 * The concurrency key and priority of a schedule's tasks (store/port.ts invariants `concurrency-keys`,
 * `priorities`): the spec's `concurrencyKey` and `priority` (routes/schedules.ts), else those of its
 * task options, when they hold them.
 */
export function scheduleLane(rec: ScheduleRecord): { concurrencyKey?: string; priority?: number } {
  // Where `PUT …/schedules` stores them (common/schedule.ts `ScheduleSpec`), else among the task options.
  const o = { ...(rec.spec.options ?? {}), ...rec.spec } as { concurrencyKey?: unknown; priority?: unknown };
  return {
    ...(typeof o.concurrencyKey === "string" ? { concurrencyKey: o.concurrencyKey } : {}),
    ...(typeof o.priority === "number" ? { priority: o.priority } : {}),
  };
}
