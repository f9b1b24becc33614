/**
 * The tick firer: fires due schedule ticks beside the worker loops, so a
 * tick's enqueue never waits for a free loop (docs/architecture.md
 * "Schedules"). Every long-lived process runs one (the worker pool,
 * actors/pool/pool.ts, from `start()` to `stop()`); the Workers entry runs a
 * pass at the start of each drive that may claim any due agent (workers.ts).
 *
 * Invariants:
 * - It only fires: per due tick one `nextDueSchedule` read (the schedule
 *   index, store/port.ts invariant `schedule-index`: no agent is claimed or
 *   read) and one atomic `fireScheduleTick` step (invariant
 *   `schedule-tick-once`, actors/pool/schedule-fire.ts). It never runs a
 *   turn, so long turns on every loop cannot hold a tick back.
 * - `liveFrom` is the time since which this firer has been up and reaching
 *   the store: the start of its first pass that answered after it started
 *   or after a pass failed on a store error. Every tick at or after it is
 *   fired, each one (common/schedule.ts `planTick`); `catchUp` decides only
 *   the ticks before it, which no firer of this process was up to fire.
 *   The worker loops' own fires (a due schedule `claimNext` answered) plan
 *   with the same `liveFrom`, so both plan the same step and the store
 *   applies one (the other answers `stale`).
 * - A pass goes on while ticks are due, at most `MAX_PASS_STEPS` steps per
 *   target (then it answers "due now" and the next pass goes on), and
 *   answers the earliest next tick it read (null: none). A step the store
 *   neither applies nor finds overtaken ends the target's pass.
 * - The pool's firer sleeps until that tick, at most the pool's longest
 *   idle wait (with no schedule at all, at most `FIRER_NO_SCHEDULE_MS`, so
 *   an idle process without schedules adds no polling); a bell (a schedule put or fired by any process publishes a
 *   new earliest tick) shortens the sleep to its time, an in-process wake
 *   ends it at most once per `pollMs`, and a wake during a pass makes the
 *   next sleep zero, so none is lost. A store error is logged
 *   (`tick firer error`), resets `liveFrom` and is retried after `pollMs`.
 */
import type { Store } from "../../store/port.ts";
import type { Clock, Logger } from "../runtime.ts";
import { fireDueSchedule } from "./schedule-fire.ts";

/** The most schedule steps one pass takes per target before it yields. */
export const MAX_PASS_STEPS = 1_000;

export interface TickFirerDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** The process metrics (actors/observe/metrics.ts): the two schedule counters. */
  metrics?: { scheduleTickFired(): void; scheduleTicksSkipped(count: number): void };
  targets: readonly string[];
  /** The definitions this process has: only their schedules are fired (invariant `definition-sets`). */
  agentNames: readonly string[];
  /** Turn ids of the tasks the ticks enqueue (the runtime's `ids`). */
  turnId: () => string;
}

export class TickFirer {
  readonly #deps: TickFirerDeps;
  #liveFrom: number | null = null;

  constructor(deps: TickFirerDeps) {
    this.#deps = deps;
  }

  /** Since when this firer has been up and reaching the store (undefined: not yet, or its last pass failed). */
  get liveFrom(): number | undefined {
    return this.#liveFrom ?? undefined;
  }

  /** Fires every due tick of every target; answers the earliest next tick read (ms; null: none; at most now when it yielded). */
  async pass(): Promise<number | null> {
    const d = this.#deps;
    const started = d.clock.now();
    let next: number | null = null;
    try {
      for (const target of d.targets) {
        const at = await this.#target(target, started);
        if (at !== null) next = Math.min(next ?? Infinity, at);
      }
    } catch (err) {
      this.#liveFrom = null;
      throw err;
    }
    return next;
  }

  async #target(workerTarget: string, started: number): Promise<number | null> {
    const d = this.#deps;
    for (let step = 0; step < MAX_PASS_STEPS; step++) {
      const r = await d.store.nextDueSchedule({ workerTarget, now: d.clock.now(), agentNames: d.agentNames });
      // The store answered: this firer is up from the start of its pass on (unless it already was).
      const liveFrom = (this.#liveFrom ??= started);
      if (r.status === "none") return r.next;
      const f = await fireDueSchedule(d, r.schedule, d.turnId(), liveFrom);
      // A step the store did not apply nor overtake (a refused enqueue): leave it to the worker loops' claims.
      // A coalesced tick is applied: the schedule moved on (store invariant `schedule-bounds`).
      if (f === null || (f.status !== "fired" && f.status !== "skipped" && f.status !== "coalesced" && f.status !== "stale")) return null;
    }
    return d.clock.now();
  }
}
