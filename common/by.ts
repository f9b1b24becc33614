/**
 * Who did it: the `by` a change made over HTTP records (the name of the
 * token or webhook secret the request came with, routes/auth.ts
 * `callerName`; null without auth or without a name).
 *
 * Invariant: `by` is written only by a change a caller made (a person's
 * approval decision, a tool result delivered over HTTP, a cancel, a reset,
 * a fork, a schedule written or deleted). A change the runtime makes on its
 * own (the watchdog's timeout, a child agent's result) carries no `by`, and
 * events and records written before `by` existed carry none: readers treat
 * an absent `by` as unknown, never as a name.
 */

/** A caller's name as recorded: a token's or webhook secret's `name`, or null. */
export type By = string | null;

/** `{ by }` when a caller's `by` was given (even null), else nothing: spread it into a record or an event. */
export function byField(by: By | undefined): { by?: By } {
  return by === undefined ? {} : { by };
}
