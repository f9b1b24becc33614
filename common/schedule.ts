/**
 * Recurring schedules: the timing of a schedule (a cron expression with a
 * time zone, or a fixed interval), its ticks, and what a worker does with the
 * ticks it finds due (`planTick`). Pure: every time comes from the caller.
 *
 * Ticks. A cron schedule ticks at the times its expression names in its
 * time zone (croner; 5 fields, or 6 with seconds first). An interval schedule
 * ticks at `anchor + k * everyMs` (k >= 1), `anchor` being the time it was
 * written. `nextTickAfter(spec, t)` is the first tick strictly after `t`
 * (null: the expression names no later time).
 *
 * Due ticks. When a process finds a schedule due (its stored `nextTick` is
 * at or before now), the ticks due are `nextTick` and the ticks after it up
 * to now. A tick at or after `liveFrom` (the time since which the process
 * finding it has been up and reaching the store, actors/pool/tick-firer.ts)
 * fell due while that process was up to fire it: it is fired, each one, one
 * store step each, oldest first, whatever `catchUp` says. The ticks before
 * `liveFrom` were missed (no process was up to fire them at their time), and
 * `catchUp` decides among those only, their newest being the *latest
 * missed tick*:
 * - `last` (default): fire the latest missed tick only;
 * - `none`: fire the latest missed tick only when it is within `ON_TIME_MS`
 *   of now (an on-time tick seen a little late), else fire nothing;
 * - `all`: fire every missed tick, oldest first, one store step each.
 * Either way at most the latest `MAX_CATCH_UP` due ticks are considered:
 * older ones are skipped. `skippedTicks` names the ticks a plan skips (the
 * range and count the `schedule_skipped` line and metric report).
 * Each fire is one atomic store step (store/port.ts invariant
 * `schedule-tick-once`), so whatever the number of workers, a tick is
 * enqueued once, under the idempotency key `scheduleKey(id, tick)`.
 */
import { Cron } from "croner";
import type { SpendLimit } from "./spend-limit.ts";

export type CatchUp = "none" | "last" | "all";

export const CATCH_UP: readonly CatchUp[] = ["none", "last", "all"];

/** The most missed ticks `catchUp: "all"` fires after an outage; older ones are skipped. */
export const MAX_CATCH_UP = 100;

/** A tick seen this late or less is on time (`catchUp: "none"` still fires it). */
export const ON_TIME_MS = 60_000;

/** The shortest interval of an `everyMs` schedule (ms). */
export const MIN_EVERY_MS = 1_000;

/** The longest interval of an `everyMs` schedule (ms): 366 days, so a schedule ticks at least once a year. */
export const MAX_EVERY_MS = 366 * 24 * 3_600_000;

/**
 * The most tasks of one schedule that may wait in its agent's queue at once
 * (store/port.ts invariant `schedule-bounds`): 1, so a tick while the
 * previous tick's task still waits is coalesced into it; MAX_CATCH_UP for
 * `catchUp: "all"`, whose missed ticks each get a task.
 */
export function queuedTicksCap(spec: Pick<ScheduleSpec, "catchUp">): number {
  return spec.catchUp === "all" ? MAX_CATCH_UP : 1;
}

/** The timing of a schedule and the task each tick enqueues, as stored. */
export interface ScheduleSpec {
  /** The task's input (JSON). */
  input: unknown;
  cron?: string;
  everyMs?: number;
  /** IANA time zone of a cron schedule (absent: UTC). */
  timezone?: string;
  catchUp: CatchUp;
  /** An interval schedule's origin: its ticks are `anchor + k * everyMs` (ms). */
  anchor: number;
  /**
   * Paused: the schedule is kept but has no next tick (its `nextTick` is
   * null, so nothing finds it due). Resuming stores the first tick after the
   * resume (`nextTickAfter(spec, now)`): the ticks passed while paused are
   * not caught up.
   */
  paused?: true;
  /** The options of each tick's task, stored as a task's are (store/types.ts `TaskOptions`; absent: none). */
  options?: ScheduleTaskOptions;
  /**
   * Each tick's task's concurrency key (common/concurrency.ts): the request's, else the one the
   * definition's `concurrencyKey(task)` derived when the schedule was written (absent: none).
   */
  concurrencyKey?: string;
  /** Each tick's task's priority in seconds (absent: 0). */
  priority?: number;
}

/** The task options a schedule carries into each tick's task (the tasks route's `verifyAttempts` and `spendLimit`, stored as a task's). */
export interface ScheduleTaskOptions {
  verifyMaxAttempts?: number;
  budget?: SpendLimit;
  budgetMayRaise?: true;
}

function cronOf(spec: Pick<ScheduleSpec, "cron" | "timezone">): Cron {
  return new Cron(spec.cron!, { paused: true, ...(spec.timezone !== undefined ? { timezone: spec.timezone } : {}) });
}

/**
 * Why a timing cannot be used, or null when it can: exactly one of `cron`
 * (5 or 6 fields) and `everyMs` (an integer from MIN_EVERY_MS to MAX_EVERY_MS), a time
 * zone croner knows (cron only), and at least one tick after `now`. Routes
 * answer the reason as `validation_failed`.
 */
export function scheduleTimingProblem(t: { cron?: string; everyMs?: number; timezone?: string }, now: number): { field: "cron" | "everyMs" | "timezone"; reason: string } | null {
  if (t.cron !== undefined && t.everyMs !== undefined) {
    return { field: "cron", reason: "Give exactly one of `cron` and `everyMs`, not both" };
  }
  if (t.cron === undefined && t.everyMs === undefined) return { field: "cron", reason: "Give exactly one of `cron` and `everyMs`: neither is given" };
  if (t.everyMs !== undefined) {
    if (!Number.isSafeInteger(t.everyMs) || t.everyMs < MIN_EVERY_MS || t.everyMs > MAX_EVERY_MS) {
      return {
        field: "everyMs",
        reason: `everyMs must be an integer from ${MIN_EVERY_MS} (1 s) to ${MAX_EVERY_MS} (366 days), got ${JSON.stringify(t.everyMs)}`,
      };
    }
    return t.timezone === undefined ? null : { field: "timezone", reason: "timezone applies to a cron schedule only" };
  }
  const fields = t.cron!.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    return { field: "cron", reason: `cron ${JSON.stringify(t.cron)} must have 5 fields (minute hour day month weekday) or 6 (seconds first)` };
  }
  let cron: Cron;
  try {
    cron = cronOf(t);
  } catch (err) {
    return { field: "cron", reason: `cron ${JSON.stringify(t.cron)} cannot be parsed: ${(err as Error).message}` };
  }
  let next: Date | null;
  try {
    next = cron.nextRun(new Date(now));
  } catch (err) {
    return { field: "timezone", reason: `timezone ${JSON.stringify(t.timezone)} is not a known IANA time zone: ${(err as Error).message}` };
  }
  return next === null ? { field: "cron", reason: `cron ${JSON.stringify(t.cron)} names no time after now` } : null;
}

/** The first tick strictly after `t` (ms), or null when there is none. */
export function nextTickAfter(spec: ScheduleSpec, t: number): number | null {
  if (spec.everyMs !== undefined) {
    const k = t < spec.anchor ? 1 : Math.floor((t - spec.anchor) / spec.everyMs) + 1;
    return spec.anchor + k * spec.everyMs;
  }
  const next = cronOf(spec).nextRun(new Date(t));
  return next === null ? null : next.getTime();
}

/** The idempotency key of a tick's task: `schedule:<scheduleId>:<tick ISO time>`. */
export function scheduleKey(scheduleId: string, tick: number): string {
  return `schedule:${scheduleId}:${new Date(tick).toISOString()}`;
}

/**
 * The due ticks from `due` through `now`, oldest first, the latest
 * MAX_CATCH_UP of them, computed without walking every tick of a long
 * outage (an interval by arithmetic, a cron by croner's `previousRuns`).
 */
function dueTicks(spec: ScheduleSpec, due: number, now: number): number[] {
  const out: number[] = [];
  if (spec.everyMs !== undefined) {
    const latest = spec.anchor + Math.floor((now - spec.anchor) / spec.everyMs) * spec.everyMs;
    for (let t = Math.max(due, latest - (MAX_CATCH_UP - 1) * spec.everyMs); t <= latest; t += spec.everyMs) out.push(t);
  } else {
    // previousRuns answers runs before its reference (a run in the same second included), newest first.
    for (const d of cronOf(spec).previousRuns(MAX_CATCH_UP, new Date(now + 1))) {
      const t = d.getTime();
      if (t >= due && t <= now) out.unshift(t);
    }
  }
  return out.length > 0 ? out : [due];
}

/**
 * What a process does with a schedule whose stored next tick `due` is at or
 * before `now`: fire `fire` (null: fire nothing) and store `next` as the
 * next tick (null: the schedule has no more ticks). Ticks at or after
 * `liveFrom` are fired each; `catchUp` applies to the ones before it (see
 * the header; the default, no `liveFrom`, treats every due tick as missed).
 * `next` may itself be due, which the next step fires.
 */
export function planTick(spec: ScheduleSpec, due: number, now: number, liveFrom = Infinity): { fire: number | null; next: number | null } {
  const ticks = dueTicks(spec, due, now);
  const missed = ticks.filter((t) => t < liveFrom);
  const live = ticks.slice(missed.length);
  if (missed.length === 0 || spec.catchUp === "all") {
    return { fire: ticks[0], next: ticks.length > 1 ? ticks[1] : nextTickAfter(spec, Math.max(now, ticks[0])) };
  }
  const latest = missed[missed.length - 1];
  const next = live.length > 0 ? live[0] : nextTickAfter(spec, Math.max(now, latest));
  if (spec.catchUp === "none" && now - latest > ON_TIME_MS) return { fire: null, next };
  return { fire: latest, next };
}

/** The most ticks `skippedTicks` counts one by one (a cron schedule); past it the count says "at least". */
export const MAX_SKIP_COUNT = 100_000;

/**
 * The ticks a step planned from `due` skips: those from `due` up to (not
 * including) the tick it fires, or its next tick when it fires none (all
 * due ticks when the schedule ends). Null when it skips none. `count` is
 * exact for an interval; a cron's is counted up to MAX_SKIP_COUNT (`capped`).
 */
export function skippedTicks(spec: ScheduleSpec, due: number, plan: { fire: number | null; next: number | null }, now: number): { from: number; to: number; count: number; capped: boolean } | null {
  const end = plan.fire ?? plan.next ?? now + 1;
  if (end <= due) return null;
  if (spec.everyMs !== undefined) {
    const count = Math.ceil((end - due) / spec.everyMs);
    return { from: due, to: due + (count - 1) * spec.everyMs, count, capped: false };
  }
  const cron = cronOf(spec);
  let count = 1;
  let to = due;
  for (let t = cron.nextRun(new Date(due))?.getTime(); t !== undefined && t < end && count < MAX_SKIP_COUNT; t = cron.nextRun(new Date(t))?.getTime()) {
    count++;
    to = t;
  }
  return { from: due, to, count, capped: count >= MAX_SKIP_COUNT };
}
