/**
 * The watchdog loop of `startWorker()`: runs `watchdogTick` when a tool call
 * is due, and otherwise backs off, so an idle process does not read the due
 * index every second.
 *
 * Invariant: a deadline already in the store is never passed by more than
 * `intervalMs` while this loop runs. Before each sleep the loop peeks at the
 * due index up to the end of that sleep (`dueToolCalls(now + sleep, 1)`):
 * - something due by then: it ticks (when something is due now) and sleeps
 *   `intervalMs`, as a fixed-interval watchdog would;
 * - nothing due by then: it sleeps the whole wait, which doubles from
 *   `intervalMs` up to `idleMaxMs`.
 * A deadline written later by this process comes from one of its claims:
 * `soon()` (called by the worker pool at each claim) sets the wait back to
 * `intervalMs` and cuts a longer sleep down to `intervalMs`. A deadline
 * written by another process is that process's watchdog's to keep; if that
 * process is gone, this loop finds it at its next peek, at most `idleMaxMs`
 * after it was written.
 * Idle cost: one store call per wake, about 1 / idleMaxMs per second (at
 * the default 30 s, 0.033 per second; measured by `npm run bench:idle` as
 * all the calls of an idle TCP Redis process past its first seconds, the
 * worker pool's 60 s safety poll aside). It is not pushed, unlike the worker
 * pool's bells (actors/pool/pool.ts): a deadline written by a live process is
 * that process's to keep, and this peek is the net for those of a process
 * that died, which no one announces.
 */
import type { Store } from "../../store/port.ts";
import type { Clock, Logger } from "../runtime.ts";
import { describeStoreError } from "./store-error.ts";
import type { WatchdogTickResult } from "./watchdog.ts";

export interface WatchdogLoopOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** One watchdog pass. */
  tick: () => Promise<WatchdogTickResult>;
  /** Called after a pass that timed calls out (the worker pool is woken). */
  onTimedOut: () => void;
  /** Shortest wait, and the wait while a deadline is near (ms). */
  intervalMs: number;
  /** Longest idle wait (ms, default `intervalMs`: a fixed interval). */
  idleMaxMs?: number;
}

export interface WatchdogLoop {
  start(): void;
  stop(): void;
  /** Sets the backoff back to `intervalMs` and ends a longer sleep within `intervalMs`. */
  soon(): void;
  readonly running: boolean;
}

/**
 * The watchdog loop with its idle backoff (see the invariant above).
 *
 * @example
 * const watchdog = createWatchdogLoop({
 *   store, clock, logger,
 *   tick: () => watchdogTick(store, clock),
 *   onTimedOut: () => pool.nudge(),
 *   intervalMs: 1_000,
 *   idleMaxMs: 30_000,
 * });
 * watchdog.start();
 */
export function createWatchdogLoop(opts: WatchdogLoopOptions): WatchdogLoop {
  const maxWait = Math.max(opts.intervalMs, opts.idleMaxMs ?? opts.intervalMs);
  let wait = opts.intervalMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** When the current sleep ends, on the timer's own time base (Date.now, like setTimeout). */
  let wakeAt = 0;
  /** Set by soon() during a pass: the pass's peek may have missed the new deadline. */
  let hurry = false;
  let running = false;
  let generation = 0;

  const schedule = (ms: number) => {
    if (timer !== undefined) clearTimeout(timer);
    wakeAt = Date.now() + ms;
    const gen = generation;
    timer = setTimeout(() => {
      timer = undefined;
      void pass(gen);
    }, ms);
  };

  async function pass(gen: number) {
    if (!running || gen !== generation) return;
    hurry = false;
    let next = Math.min(maxWait, wait * 2);
    try {
      const now = opts.clock.now();
      const ahead = await opts.store.dueToolCalls(now + next, 1);
      if (ahead.length > 0) {
        next = opts.intervalMs;
        const r = await opts.tick();
        if (r.timedOut > 0) opts.onTimedOut();
      }
    } catch (err) {
      next = opts.intervalMs;
      opts.logger.warn("watchdog tick failed", describeStoreError(err, opts.store.kind));
    }
    if (hurry) next = opts.intervalMs;
    wait = next;
    if (running && gen === generation && timer === undefined) schedule(next);
  }

  return {
    get running() {
      return running;
    },
    start() {
      if (running) return;
      running = true;
      generation++;
      wait = opts.intervalMs;
      schedule(opts.intervalMs);
    },
    stop() {
      running = false;
      generation++;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
    soon() {
      wait = opts.intervalMs;
      hurry = true;
      if (running && timer !== undefined && wakeAt - Date.now() > opts.intervalMs) schedule(opts.intervalMs);
    },
  };
}
