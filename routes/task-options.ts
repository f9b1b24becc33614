/**
 * The options a task takes (`verifyAttempts`, `spendLimit`), as the tasks
 * route (routes/agents.ts) and the schedules route (routes/schedules.ts)
 * both read them: one schema (picked from `TaskRequest`, so both refuse the
 * same bad values with the same 400) and one translation to the stored form
 * (store/types.ts `TaskOptions`, under the names stored tasks have always
 * had: `verifyMaxAttempts`, `budget`). A spend limit may raise the agent's
 * (`budgetMayRaise`) only when the request's token has `admin` or auth is off
 * (common/spend-limit.ts).
 */
import type { Context } from "hono";
import { tokenHasVerb } from "./auth.ts";
import type { RouteRuntime } from "./runtime.ts";
import { TaskRequest } from "./schemas.ts";
import type { ScheduleTaskOptions } from "../common/schedule.ts";

/** The task-option fields of a request body, as `TaskRequest` declares them. */
export const TaskOptionFields = TaskRequest.pick({ verifyAttempts: true, spendLimit: true }).shape;

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
