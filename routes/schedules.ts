/**
 * Recurring schedules of an agent (common/schedule.ts; store/port.ts
 * `Schedules`).
 *
 * - `PUT /v1/agents/:agentId/schedules/:scheduleId` creates (201) or
 *   replaces (200) a schedule: `{ agent, input, cron | everyMs, timezone?,
 *   catchUp? }`. The timing is checked before anything is stored (a bad
 *   expression, time zone or interval is 400 `validation_failed` with the
 *   reason in `detail`); `agent` binds as a task's does (409
 *   `agent_definition_conflict`, 422 `unknown_agent_definition`). An agent
 *   holds at most `maxSchedulesPerAgent` schedules (default 100): a new one
 *   past it is 409 `schedule_limit` and stores nothing; replacing one is not
 *   refused (store/port.ts invariant `schedule-bounds`). The first tick is
 *   the first after now; writing rings, so sleeping pools read the new due
 *   time.
 * - `PATCH .../schedules/:scheduleId` `{ paused }` pauses (no tick fires,
 *   `nextRunAt` null) or resumes (the next tick after now fires; the ticks
 *   passed while paused are not caught up) a schedule (200, the schedule).
 * - A schedule carries the task options a task takes (`verifyAttempts`,
 *   `spendLimit`; routes/task-options.ts, checked alike) into each tick's task,
 *   and its `concurrencyKey` and `priority` (stored on the spec; a key the
 *   definition derives when the schedule is written, `via: "schedule"`).
 * - `GET .../schedules/:scheduleId`, `GET .../schedules` (the agent's, by
 *   id) and `DELETE .../schedules/:scheduleId`; an unknown schedule is 404
 *   `schedule_not_found`.
 *
 * Each tick enqueues one ordinary task under the idempotency key
 * `schedule:<scheduleId>:<tick ISO time>`, fired by the worker pool
 * (actors/pool/schedule-fire.ts) exactly once whatever the number of
 * workers (store invariant `schedule-tick-once`). Writing and deleting need
 * the `enqueue` verb (a schedule enqueues tasks), reading `read`.
 */
import { logGrew } from "./live-feed.ts";
import { byField } from "../common/by.ts";
import type { By } from "../common/by.ts";
import { callerName } from "./auth.ts";
import { z } from "@hono/zod-openapi";
import { MAX_EVERY_MS, MIN_EVERY_MS, nextTickAfter, type ScheduleSpec, scheduleTimingProblem } from "../common/schedule.ts";
import { DEFAULTS } from "../common/defaults.ts";
import type { ScheduleRecord } from "../store/port.ts";
import { BODY_PROBLEMS, defineRoute, json, jsonBody, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { AgentId, AgentParams, SpendLimitBody } from "./schemas.ts";
import { storedTaskOptions, TaskOptionFields, taskLane } from "./task-options.ts";
import type { Context } from "hono";

const ScheduleId = z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/).describe("Schedule id, `^[A-Za-z0-9_.:-]{1,64}$`");
const ScheduleParams = z.object({ agentId: AgentId, scheduleId: ScheduleId });
const Iso = z.string().describe("ISO 8601, UTC");

const ScheduleRequest = z.strictObject({
  agent: z.string().min(1).max(64).describe("Name of the agent definition each tick's task names (binds like a task's `agent`)"),
  input: z.union([z.string(), z.record(z.string(), z.unknown())]).describe("The input of each tick's task: text or a JSON object"),
  cron: z.string().min(1).max(256).optional()
    .describe("Cron expression, 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first); not with `everyMs`"),
  // Checked by the route (common/schedule.ts `scheduleTimingProblem`), so a refusal names the field and the rule.
  everyMs: z.number().optional().openapi({ type: "integer", minimum: MIN_EVERY_MS, maximum: MAX_EVERY_MS })
    .describe(`Fixed interval (ms, ${MIN_EVERY_MS} to ${MAX_EVERY_MS}: 1 s to 366 days) from the write; not with \`cron\``),
  timezone: z.string().min(1).max(64).optional().describe("IANA time zone of `cron` (default UTC)"),
  catchUp: z.enum(["none", "last", "all"]).optional()
    .describe("Ticks missed while no worker ran: `last` (default) fires the latest, `none` none, `all` each (at most 100)"),
  paused: z.boolean().optional().describe("Write the schedule paused (default false): no tick fires until it is resumed (PATCH)"),
  // The task options of each tick's task: the tasks route's own fields (routes/task-options.ts), checked alike.
  ...TaskOptionFields,
}).openapi("ScheduleRequest");

const SchedulePatch = z.strictObject({
  paused: z.boolean().describe("true: pause (no tick fires); false: resume (the next tick after now fires; ticks passed while paused do not)"),
}).openapi("SchedulePatch");

const ScheduleView = z.object({
  agentId: z.string(),
  scheduleId: z.string(),
  agent: z.string(),
  input: z.unknown(),
  cron: z.string().optional(),
  everyMs: z.int().optional(),
  timezone: z.string().optional(),
  catchUp: z.enum(["none", "last", "all"]),
  paused: z.boolean().describe("Paused: no tick fires (`nextRunAt` is null) until resumed"),
  verifyAttempts: z.int().optional().describe("Each tick's task's `verifyAttempts`"),
  spendLimit: SpendLimitBody.optional().describe("Each tick's task's `spendLimit`"),
  concurrencyKey: z.string().optional().describe("Each tick's task's `concurrencyKey` (the request's, else the definition's `concurrencyKey(task)` when written)"),
  priority: z.int().optional().describe("Each tick's task's `priority`"),
  nextRunAt: Iso.nullable().describe("The next tick; null: no more ticks, or paused"),
  nextRunAtMs: z.number().nullable(),
  lastFired: z.object({ tick: Iso, tickMs: z.number(), turnId: z.string(), at: Iso }).nullable()
    .describe("The last tick fired and the turn its task got"),
  createdAt: Iso,
  updatedAt: Iso,
  by: z.string().nullable().optional()
    .describe("Who wrote this revision of the schedule: the name of the request's token (null without auth or a name; absent on schedules written before `by`)"),
}).openapi("ScheduleView");

const iso = (ms: number) => new Date(ms).toISOString();

function scheduleView(r: ScheduleRecord): z.infer<typeof ScheduleView> {
  const { spec } = r;
  return {
    agentId: r.agentId, scheduleId: r.scheduleId, agent: r.agentName, input: spec.input,
    ...(spec.cron !== undefined ? { cron: spec.cron } : {}),
    ...(spec.everyMs !== undefined ? { everyMs: spec.everyMs } : {}),
    ...(spec.timezone !== undefined ? { timezone: spec.timezone } : {}),
    catchUp: spec.catchUp, paused: spec.paused === true,
    ...(spec.options?.verifyMaxAttempts !== undefined ? { verifyAttempts: spec.options.verifyMaxAttempts } : {}),
    ...(spec.options?.budget !== undefined ? { spendLimit: spec.options.budget } : {}),
    ...(spec.concurrencyKey !== undefined ? { concurrencyKey: spec.concurrencyKey } : {}),
    ...(spec.priority !== undefined ? { priority: spec.priority } : {}),
    nextRunAt: r.nextTick === null ? null : iso(r.nextTick), nextRunAtMs: r.nextTick,
    lastFired: r.lastFired === null ? null : { tick: iso(r.lastFired.tick), tickMs: r.lastFired.tick, turnId: r.lastFired.turnId, at: iso(r.lastFired.at) },
    createdAt: iso(r.createdAt), updatedAt: iso(r.updatedAt), ...byField(r.by),
  };
}

const putSchedule = defineRoute({
  method: "put",
  path: "/v1/agents/{agentId}/schedules/{scheduleId}",
  operationId: "putSchedule",
  summary: "Create or replace a recurring schedule (each tick enqueues one task)",
  description: "Exactly one of `cron` (5 or 6 fields, with `timezone`) and `everyMs` (1000 to 31622400000). Each tick enqueues one " +
    "ordinary task under the idempotency key `schedule:<scheduleId>:<tick ISO time>`, exactly once whatever the number " +
    "of workers. `catchUp` says what happens to ticks missed while no worker ran (default `last`). An agent holds at most " +
    "`maxSchedulesPerAgent` schedules (default 100; a new one past it is 409 `schedule_limit`). A tick while the schedule's " +
    "previous task still waits in the queue is coalesced into it (no new task; `catchUp: \"all\"`: up to 100 may wait).",
  tags: ["schedules"],
  request: { params: ScheduleParams, body: jsonBody(ScheduleRequest) },
  responses: { 200: json("Replaced", ScheduleView), 201: json("Created", ScheduleView) },
}, ["invalid_agent_id", ...BODY_PROBLEMS, "agent_definition_conflict", "schedule_limit", "unknown_agent_definition", "invalid_concurrency_key"], "enqueue");

const patchSchedule = defineRoute({
  method: "patch",
  path: "/v1/agents/{agentId}/schedules/{scheduleId}",
  operationId: "patchSchedule",
  summary: "Pause or resume a schedule",
  description: "`{ paused: true }`: no tick fires while paused (`nextRunAt` null). `{ paused: false }`: the schedule's next " +
    "tick after now fires; the ticks passed while paused are not caught up. Repeating either answers the schedule as it is.",
  tags: ["schedules"],
  request: { params: ScheduleParams, body: jsonBody(SchedulePatch) },
  responses: { 200: json("The schedule", ScheduleView) },
}, ["invalid_agent_id", ...BODY_PROBLEMS, "schedule_not_found"], "enqueue");

const getSchedule = defineRoute({
  method: "get",
  path: "/v1/agents/{agentId}/schedules/{scheduleId}",
  operationId: "getSchedule",
  summary: "Read a schedule",
  tags: ["schedules"],
  request: { params: ScheduleParams },
  responses: { 200: json("The schedule", ScheduleView) },
}, ["invalid_agent_id", "validation_failed", "schedule_not_found"], "read");

const listSchedules = defineRoute({
  method: "get",
  path: "/v1/agents/{agentId}/schedules",
  operationId: "listSchedules",
  summary: "The agent's schedules, by id",
  tags: ["schedules"],
  request: { params: AgentParams },
  responses: { 200: json("The schedules", z.object({ schedules: z.array(ScheduleView) })) },
}, ["invalid_agent_id"], "read");

const deleteSchedule = defineRoute({
  method: "delete",
  path: "/v1/agents/{agentId}/schedules/{scheduleId}",
  operationId: "deleteSchedule",
  summary: "Delete a schedule (no tick fires after it)",
  tags: ["schedules"],
  request: { params: ScheduleParams },
  responses: { 200: json("Deleted", z.object({ deleted: z.literal(true), agentId: z.string(), scheduleId: z.string() })) },
}, ["invalid_agent_id", "validation_failed", "schedule_not_found"], "enqueue");

/** The timing and task options of a request, checked (400 `validation_failed` with the reason), with its first tick (null when paused). */
function specOf(rt: RouteRuntime, c: Context, body: z.infer<typeof ScheduleRequest>, now: number): { spec: ScheduleSpec; first: number | null } {
  const timing = {
    ...(body.cron !== undefined ? { cron: body.cron } : {}),
    ...(body.everyMs !== undefined ? { everyMs: body.everyMs } : {}),
    ...(body.timezone !== undefined ? { timezone: body.timezone } : {}),
  };
  const problem = scheduleTimingProblem(timing, now);
  if (problem) {
    throw new ProblemError("validation_failed", problem.reason, { extra: { errors: [{ path: [problem.field], message: problem.reason }] } });
  }
  const options = storedTaskOptions(rt, c, body);
  const def = rt.agents.get(body.agent);
  const lane = def ? taskLane(callerName(c), def, body, { agentId: c.req.param("agentId") ?? "", input: body.input, via: "schedule" }) : {};
  const spec: ScheduleSpec = {
    ...lane,
    input: body.input, ...timing, catchUp: body.catchUp ?? "last", anchor: now,
    ...(body.paused === true ? { paused: true as const } : {}), ...(Object.keys(options).length > 0 ? { options } : {}),
  };
  return { spec, first: spec.paused ? null : nextTickAfter(spec, now) };
}

/**
 * Pauses or resumes a schedule: a write over the revision read (`expectRev`),
 * read again when another write came between (so a deleted schedule is not
 * revived and a concurrent replace is not undone). Pausing stores no next
 * tick; resuming stores the first tick after now, so the ticks passed while
 * paused are not caught up. A schedule already so is answered as it is.
 * The write records who made it (`by`, as every schedule write).
 */
async function setPaused(rt: RouteRuntime, agentId: string, scheduleId: string, paused: boolean, by: By): Promise<ScheduleRecord> {
  for (;;) {
    const cur = await rt.store.getSchedule(agentId, scheduleId);
    if (!cur) throw new ProblemError("schedule_not_found", `Agent "${agentId}" has no schedule "${scheduleId}"`);
    if ((cur.spec.paused === true) === paused) return cur;
    const { paused: _was, ...rest } = cur.spec;
    const now = rt.clock.now();
    const spec: ScheduleSpec = paused ? { ...rest, paused: true } : rest;
    const r = await rt.store.putSchedule({
      agentId, scheduleId, agentName: cur.agentName, workerTarget: cur.workerTarget, spec,
      nextTick: paused ? null : nextTickAfter(spec, now), by, now, expectRev: cur.rev,
    });
    if (r.status === "created" || r.status === "replaced") return r.schedule;
    // `stale`: another write came between; a conflict or a bound cannot answer a write over an existing revision.
    if (r.status !== "stale") throw new Error(`the store answered ${r.status} to a write over an existing schedule`);
  }
}

export function scheduleRoutes(rt: RouteRuntime) {
  return routeApp(rt)
    .openapi(putSchedule, async (c) => {
      const { agentId, scheduleId } = c.req.valid("param");
      const body = c.req.valid("json");
      const def = rt.agents.get(body.agent);
      if (!def) throw new ProblemError("unknown_agent_definition", `No agent definition is named ${JSON.stringify(body.agent)}`);
      const now = rt.clock.now();
      const { spec, first } = specOf(rt, c, body, now);
      const maxSchedules = rt.limits.maxSchedulesPerAgent ?? DEFAULTS.maxSchedulesPerAgent;
      const r = await rt.store.putSchedule({ agentId, scheduleId, agentName: def.name, workerTarget: def.workerTarget, spec, nextTick: first, by: callerName(c), now, maxSchedules });
      if (r.status === "schedule_limit") {
        throw new ProblemError("schedule_limit", `Agent "${agentId}" holds ${r.limit} schedules, the most it may (maxSchedulesPerAgent); delete one or replace an existing id`, {
          extra: { limit: r.limit },
        });
      }
      if (r.status === "definition_conflict") {
        throw new ProblemError("agent_definition_conflict", `Agent "${agentId}" is bound to definition "${r.boundTo}", not "${def.name}"`, {
          extra: { boundTo: r.boundTo },
        });
      }
      if (r.status === "stale") throw new Error("the store answered stale to a write over no revision");
      // The store published the new due time to listening pools; this process's pool reads it at its next poll.
      rt.wake(agentId, c.req.raw);
      return r.status === "created" ? c.json(scheduleView(r.schedule), 201) : c.json(scheduleView(r.schedule), 200);
    })
    .openapi(patchSchedule, async (c) => {
      const { agentId, scheduleId } = c.req.valid("param");
      const r = await setPaused(rt, agentId, scheduleId, c.req.valid("json").paused, callerName(c));
      rt.wake(agentId, c.req.raw);
      return c.json(scheduleView(r), 200);
    })
    .openapi(getSchedule, async (c) => {
      const { agentId, scheduleId } = c.req.valid("param");
      const r = await rt.store.getSchedule(agentId, scheduleId);
      if (!r) throw new ProblemError("schedule_not_found", `Agent "${agentId}" has no schedule "${scheduleId}"`);
      return c.json(scheduleView(r), 200);
    })
    .openapi(listSchedules, async (c) => {
      const { agentId } = c.req.valid("param");
      return c.json({ schedules: (await rt.store.listSchedules(agentId)).map(scheduleView) }, 200);
    })
    .openapi(deleteSchedule, async (c) => {
      const { agentId, scheduleId } = c.req.valid("param");
      const r = await rt.store.deleteSchedule(agentId, scheduleId, { by: callerName(c), now: rt.clock.now() });
      if (r.status === "schedule_not_found") throw new ProblemError("schedule_not_found", `Agent "${agentId}" has no schedule "${scheduleId}"`);
      logGrew(rt, agentId);
      return c.json({ deleted: true as const, agentId, scheduleId }, 200);
    });
}
