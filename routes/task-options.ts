/**
 * The options a task takes (`verifyAttempts`, `spendLimit`), as the tasks
 * route (routes/agents.ts) and the schedules route (routes/schedules.ts)
 * both read them: one schema (picked from `TaskRequest`, so both refuse the
 * same bad values with the same 400) and one translation to the stored form
 * (store/types.ts `TaskOptions`, under the names stored tasks have always
 * had: `verifyMaxAttempts`, `budget`). A spend limit may raise the agent's
 * (`budgetMayRaise`) only when the request's token has `admin` or auth is off
 * (common/spend-limit.ts).
 *
 * `concurrencyKey` and `priority` (common/concurrency.ts) are task options
 * too, stored on the task itself (store/types.ts `InboxTask`), not among its
 * `options`: `taskLane` gives them, the key derived by the definition when
 * the request gives none (agents/concurrency-key.ts). A key a definition
 * derives that is not a key is 422 `invalid_concurrency_key`; nothing is
 * enqueued.
 */
import type { Context } from "hono";
import { tokenHasVerb } from "./auth.ts";
import type { RouteRuntime } from "./runtime.ts";
import { TaskRequest } from "./schemas.ts";
import type { ScheduleTaskOptions } from "../common/schedule.ts";
import type { AnyAgent } from "../agents/define.ts";
import { type ConcurrencyKeyTask, InvalidConcurrencyKey, laneFields, taskConcurrencyKey } from "../agents/concurrency-key.ts";
import { ProblemError } from "./problem.ts";

/** The task-option fields of a request body, as `TaskRequest` declares them. */
export const TaskOptionFields = TaskRequest.pick({ verifyAttempts: true, spendLimit: true, concurrencyKey: true, priority: true }).shape;

/** The stored options of a request's task options. */
export function storedTaskOptions(
  rt: Pick<RouteRuntime, "auth">,
  c: Context,
  body: { verifyAttempts?: number | undefined; spendLimit?: TaskRequest["spendLimit"] },
): ScheduleTaskOptions {
  const { verifyAttempts, spendLimit } = body;
  return {
    ...(verifyAttempts !== undefined ? { verifyMaxAttempts: verifyAttempts } : {}),
    ...(spendLimit !== undefined ? { budget: spendLimit } : {}),
    // A task's spend limit only lowers the agent's, unless the enqueuer operates the server (common/spend-limit.ts).
    ...(spendLimit !== undefined && (rt.auth === undefined || tokenHasVerb(c, "admin")) ? { budgetMayRaise: true as const } : {}),
  };
}

/** A task's key and priority as the enqueue takes them (absent ones left out; see the header). */
export function taskLane(
  by: string | null,
  def: AnyAgent,
  body: { concurrencyKey?: string | undefined; priority?: number | undefined },
  task: Omit<ConcurrencyKeyTask, "agentName" | "by">,
): { concurrencyKey?: string; priority?: number } {
  try {
    const key = taskConcurrencyKey(def, body.concurrencyKey, { ...task, agentName: def.name, ...(by !== null ? { by } : {}) });
    return laneFields(key, body.priority);
  } catch (err) {
    if (err instanceof InvalidConcurrencyKey) throw new ProblemError("invalid_concurrency_key", err.message);
    throw err;
  }
}
