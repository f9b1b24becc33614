/**
 * Delayed tasks at the HTTP surface (`delayMs` or `runAt` of
 * `POST /v1/agents/:agentId/tasks`; store/port.ts invariant `delayed-tasks`).
 *
 * - `delayMs` counts from the server's clock when the request is handled;
 *   `runAt` is an absolute time. `taskRunAt` refuses both at once (400
 *   naming the two fields and the rule). The schema refuses a negative
 *   or fractional delay, a delay over 30 days and a time that is not ISO 8601
 *   with an offset; `taskRunAt` refuses a `runAt` more than 30 days ahead
 *   (400 `validation_failed`, nothing enqueued). A `runAt` in the past is due
 *   at once (the store stores it as now).
 * - An agent holds at most `maxDelayedTasks` delayed tasks (default 10 000,
 *   store/delayed-bound.ts): one more is 429 `too_many_delayed_tasks` with
 *   `limit`, nothing enqueued (the store refuses before any write).
 * - A delayed task's answer never waits (`Prefer: wait` is not applied to
 *   it): its turn cannot end within any wait the server grants before it
 *   starts, so the 202 comes at once, without `Preference-Applied`.
 */
import { ProblemError } from "./problem.ts";
import { MAX_TASK_DELAY_MS } from "./schemas.ts";

/** The task's due time (ms) from a validated body, or undefined when it is not delayed; throws 400 when both are given or too far ahead. */
export function taskRunAt(body: { delayMs?: number; runAt?: string }, now: number): number | undefined {
  if (body.delayMs !== undefined && body.runAt !== undefined) {
    throw new ProblemError("validation_failed", "delayMs and runAt both say when the task runs: give one of them, not both", {
      extra: { errors: [{ path: ["runAt"], code: "custom", message: "delayMs and runAt both say when the task runs: give one of them, not both" }] },
    });
  }
  if (body.delayMs !== undefined) return now + body.delayMs;
  if (body.runAt === undefined) return undefined;
  const at = Date.parse(body.runAt);
  if (at - now > MAX_TASK_DELAY_MS) {
    throw new ProblemError("validation_failed", `runAt ${body.runAt} is more than 30 days ahead`, {
      extra: { errors: [{ path: ["runAt"], code: "too_big", message: "at most 30 days ahead" }] },
    });
  }
  return Math.max(at, now);
}

/** 429 `too_many_delayed_tasks`: the agent holds `limit` delayed tasks; nothing was enqueued. */
export function tooManyDelayed(agentId: string, limit: number): ProblemError {
  return new ProblemError(
    "too_many_delayed_tasks",
    `Agent "${agentId}" holds ${limit} delayed tasks not yet due (maxDelayedTasks); cancel one or wait until one is due`,
    { extra: { limit } },
  );
}

/** A due time as the answers give it (ISO 8601, UTC). */
export const runAtIso = (ms: number) => new Date(ms).toISOString();
