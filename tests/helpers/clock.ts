/** A clock the test moves by hand, to drive leases and deadlines without waiting. */
import type { Clock } from "../../actors/runtime.ts";

export interface ManualClock extends Clock {
  /** Moves time forward by `ms` and returns the new time. */
  advance(ms: number): number;
  set(t: number): void;
}

export function manualClock(start = 1_700_000_000_000): ManualClock {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      if (!(ms >= 0)) throw new RangeError(`Cannot move a clock backwards (${ms} ms)`);
      t += ms;
      return t;
    },
    set(next: number) {
      t = next;
    },
  };
}
