/**
 * The bound on an agent's delayed tasks (store/port.ts invariant
 * `delayed-tasks`): the tasks queued with a `runAt` after now. An enqueue of
 * one more delayed task while the agent holds `maxDelayedTasks` of them is
 * refused (`too_many_delayed`) and writes nothing; immediate tasks, tasks due
 * at once and duplicates are not counted against it and pass. Every adapter
 * applies it the same way.
 */
import { StoreInputError } from "../errors/store.ts";

/** The bound when the request names none: 10,000 delayed tasks per agent. */
export const DEFAULT_MAX_DELAYED_TASKS = 10_000;

/** The request's bound, checked: a whole number from 0 (absent: the default). */
export function maxDelayedOf(max: number | undefined): number {
  if (max === undefined) return DEFAULT_MAX_DELAYED_TASKS;
  if (!Number.isSafeInteger(max) || max < 0) {
    throw new StoreInputError(`Cannot use maxDelayedTasks ${String(max)}: it must be a whole number from 0`);
  }
  return max;
}
