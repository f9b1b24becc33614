/**
 * Agent routes: enqueue a task, read an agent, cancel its turn.
 *
 * - `POST /v1/agents/:agentId/tasks` writes the task into the inbox (the
 *   store assigns nothing: the turn id comes from `rt.ids`), then rings.
 *   The first task binds the id to a definition; a task naming another one
 *   is refused (409). An idempotency key seen before answers the first
 *   task's turn with `duplicate: true` and enqueues nothing. A signed task
 *   without a key stands under `delivery:<scheme>:<message id>`. A task's
 *   `spendLimit` lowers the agent's; the task records `budgetMayRaise` (its
 *   fields may raise the agent's) only when the token has `admin` or auth is
 *   off (common/spend-limit.ts). A task with `delayMs` or `runAt` is delayed
 *   (routes/task-delay.ts, store invariant `delayed-tasks`): the 202 carries
 *   its `runAt` at once, whatever `Prefer: wait` asks.
 *   A task's `concurrencyKey` and `priority` (routes/task-options.ts
 *   `taskLane`) are stored on it; without a key the definition may derive one.
 * - `GET /v1/agents/:agentId` answers the view of routes/agent-view.ts.
 * - `POST /v1/agents/:agentId/cancel` mails a cancel aimed at one turn: the
 *   `turnId` of the body, else the turn active now (fixed when the store
 *   accepts it). A cancel never reaches another turn: one for a turn that
 *   ended is 409 `turn_finished`; one accepted while its turn was ending does
 *   nothing (the host logs `mail_ignored` with `why: "turn_finished"`).
 * - `GET /v1/agents/:agentId/tasks/:turnId` says where a turn is (a delayed task's `runAt` while queued or active;
 *   its key and priority while queued or active; `waiting` while queued, routes/waiting.ts).
 * - `DELETE /v1/agents/:agentId/tasks/:turnId` cancels a queued task: it
 *   leaves the inbox and its turn reads `cancelled` from then on (its
 *   idempotency key keeps answering that turn). A task that started is 409
 *   `turn_started` (use the cancel route), one that ended 409 `turn_finished`.
 */
import { versionLive } from "./versions.ts";
import { callerName, tokenHasVerb } from "./auth.ts";
import { storedTaskOptions, taskLane } from "./task-options.ts";
import { agentView, deliveredCalls } from "./agent-view.ts";
import { signedIdempotencyKey } from "./auth.ts";
import { BODY_PROBLEMS, defineRoute, json, jsonBody, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import type { EnqueueTaskRequest } from "../store/port.ts";
import { logGrew } from "./live-feed.ts";
import { DEFAULT_MAX_WAIT_SECONDS, preferredWait, TaskEnded, waitForTurnEnd } from "./prefer-wait.ts";
import { z } from "@hono/zod-openapi";
import { runAtIso, taskRunAt, tooManyDelayed } from "./task-delay.ts";
import { waitingOf } from "./waiting.ts";
import {
  AgentParams,
  AgentView,
  CancelAccepted,
  CancelRequest,
  QUEUED_TASKS_SHOWN,
  TaskAccepted,
  TaskCancelled,
  TaskRequest,
  TurnParams,
  TurnView,
} from "./schemas.ts";

const DEFAULT_CANCEL_REASON = "Cancelled by request";

const PreferHeader = z.object({
  Prefer: z.string().optional().describe("`wait=<seconds>`: wait for the turn's end (RFC 7240; routes/prefer-wait.ts)"),
});

const enqueueTask = defineRoute({
  method: "post",
  path: "/v1/agents/{agentId}/tasks",
  operationId: "enqueueTask",
  summary: "Enqueue a task (starts a turn when the agent is free)",
  description: "The first task binds the agent id to a definition. A repeated `idempotencyKey` answers " +
    "the first task's turn with `duplicate: true` and enqueues nothing. With `Prefer: wait=<seconds>` " +
    "(RFC 7240, cut to the server's cap, default 60) a new task's answer waits for the turn's end: `200` " +
    "with its status, output or error and usage when it ends within the wait, `202` otherwise; both carry " +
    "`Preference-Applied: wait=<seconds>`. With `delayMs` or `runAt` (not both; at most 30 days ahead; a past " +
    "`runAt` is due at once) the task is delayed: it is not started before `runAt`, joins the agent's queue then " +
    "(tasks without a delay are not held behind it), and its `202` comes at once with `runAt`, whatever `Prefer: wait` asks. " +
    "An agent holds at most `maxDelayedTasks` delayed tasks not yet due (default 10 000): one more is `429 too_many_delayed_tasks`.",
  tags: ["agents"],
  request: { params: AgentParams, body: jsonBody(TaskRequest), headers: PreferHeader },
  responses: {
    200: json("The turn ended within the `Prefer: wait` (header `Preference-Applied`)", TaskEnded),
    202: json("Enqueued (or a duplicate)", TaskAccepted),
  },
}, ["invalid_agent_id", ...BODY_PROBLEMS, "agent_definition_conflict", "unknown_agent_definition", "invalid_concurrency_key", "too_many_delayed_tasks"], { verb: "enqueue", signable: true });

const getAgent = defineRoute({
  method: "get",
  path: "/v1/agents/{agentId}",
  operationId: "getAgent",
  summary: "Read an agent: state, turn, pending tool calls, output, usage",
  tags: ["agents"],
  request: { params: AgentParams },
  responses: { 200: json("The agent", AgentView) },
}, ["invalid_agent_id", "agent_not_found", "snapshot_unrestorable"], "read");

const cancelTurn = defineRoute({
  method: "post",
  path: "/v1/agents/{agentId}/cancel",
  operationId: "cancelTurn",
  summary: "Cancel a running turn (it fails with reason `cancelled`)",
  description: "Aimed at `turnId`, else at the turn active when the cancel is accepted; it never applies " +
    "to another turn. A cancel accepted while its turn was already ending does nothing (event " +
    "`mail_ignored`, `why: turn_finished`). Queued tasks are cancelled with `DELETE .../tasks/{turnId}`.",
  tags: ["agents"],
  request: { params: AgentParams, body: jsonBody(CancelRequest, { required: false }) },
  responses: { 202: json("Cancel mailed", CancelAccepted) },
}, [
  "invalid_agent_id", ...BODY_PROBLEMS, "agent_not_found", "not_active", "turn_finished", "turn_not_started",
  "turn_not_found",
], { verb: "cancel", signable: true });

const getTurn = defineRoute({
  method: "get",
  path: "/v1/agents/{agentId}/tasks/{turnId}",
  operationId: "getTurn",
  summary: "Where a turn is (queued, active, done, failed, cancelled), with its task's input",
  tags: ["agents"],
  request: { params: TurnParams },
  responses: { 200: json("The turn", TurnView) },
}, ["invalid_agent_id", "validation_failed", "agent_not_found", "turn_not_found"], "read");

const cancelTask = defineRoute({
  method: "delete",
  path: "/v1/agents/{agentId}/tasks/{turnId}",
  operationId: "cancelTask",
  summary: "Cancel a queued task before it starts",
  description: "Removes the task from the inbox; the turn reads `cancelled` and its idempotency key keeps " +
    "answering it. Repeating the request answers 200 with `duplicate: true`.",
  tags: ["agents"],
  request: { params: TurnParams },
  responses: { 200: json("Cancelled", TaskCancelled) },
}, ["invalid_agent_id", "validation_failed", "agent_not_found", "turn_not_found", "turn_started", "turn_finished"], "cancel");

/**
 * The agent routes, chained.
 * Long because the route handlers are one chain (the app's type, routes/app-type.gen.ts, is read
 * from it); each handler is measured on its own and stays short.
 */
export function agentRoutes(rt: RouteRuntime) {
  return routeApp(rt)
    .openapi(enqueueTask, async (c) => {
      const { agentId } = c.req.valid("param");
      const body = c.req.valid("json");
      // A signed task without a key of its own stands under its message id (routes/auth.ts).
      const idempotencyKey = body.idempotencyKey ?? signedIdempotencyKey(c);
      const def = rt.agents.get(body.agent);
      if (!def) {
        throw new ProblemError("unknown_agent_definition", `No agent definition is named ${JSON.stringify(body.agent)}`);
      }
      const now = rt.clock.now();
      // A delayed task (routes/task-delay.ts): checked before anything is read or written; its answer never waits.
      const runAt = taskRunAt(body, now);
      const lane = taskLane(callerName(c), def, body, { agentId, input: body.input, via: "task" });
      const wait = runAt !== undefined && runAt > now ? null : waitSeconds(rt, c.req.raw.headers.get("prefer"));
      // The log's end before the task: its turn's end comes after it (read only when asked to wait).
      const after = wait === null ? 0 : (await rt.store.getAgent(agentId))?.lastEventId ?? 0;
      const task: EnqueueTaskRequest = {
        agentId,
        agentName: def.name,
        workerTarget: def.workerTarget,
        input: body.input,
        options: storedTaskOptions(rt, c, body),
        ...lane,
        ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
        turnId: rt.ids.turnId(),
        now,
        ...(runAt !== undefined ? { runAt } : {}),
        ...(rt.limits.maxDelayedTasks !== undefined ? { maxDelayedTasks: rt.limits.maxDelayedTasks } : {}),
      };
      // With a free local loop, the enqueue and its claim go in one round trip (RouteRuntime.enqueueTask).
      const { result: r, rung } = rt.enqueueTask ? await rt.enqueueTask(task, c.req.raw) : { result: await rt.store.enqueueTask(task), rung: false };
      if (r.status === "too_many_delayed") throw tooManyDelayed(agentId, r.limit);
      if (r.status === "definition_conflict") {
        throw new ProblemError(
          "agent_definition_conflict",
          `Agent "${agentId}" is bound to definition "${r.boundTo}", not "${def.name}"`,
          { extra: { boundTo: r.boundTo } },
        );
      }
      // Never asked for here (no refuseDeleted): a task to a deleted id creates the agent anew.
      if (r.status === "agent_deleted") throw new Error("the store refused a task it was not asked to refuse");
      // A duplicate enqueued nothing: no bell to ring.
      if (r.status === "enqueued") {
        // An enqueue appends no turn's end.
        logGrew(rt, agentId, true);
        if (!rung) rt.wake(agentId, c.req.raw);
      }
      if (wait !== null && r.status === "enqueued") {
        const end = await waitForTurnEnd({ rt, agentId, turnId: r.turnId, after, waitMs: wait * 1000, signal: c.req.raw.signal });
        c.header("Preference-Applied", `wait=${wait}`);
        if (end) return c.json(end, 200);
      }
      const at = r.status === "enqueued" ? runAt : await firstRunAt(rt, agentId, r.turnId);
      return c.json({ agentId, turnId: r.turnId, duplicate: r.status === "duplicate", ...(at !== undefined ? { runAt: runAtIso(at) } : {}) }, 202);
    })
    .openapi(getAgent, async (c) => {
      const { agentId } = c.req.valid("param");
      const head = await rt.store.getAgent(agentId);
      if (!head) throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
      const queued = head.pendingTasks > 0 ? await rt.store.listQueuedTasks(agentId, QUEUED_TASKS_SHOWN) : [];
      const waiting = queued.length > 0 ? await waitingOf(rt, head, queued, queued[0].turnId) : undefined;
      return c.json(agentView(head, await deliveredCalls(rt.store, head), queued, await rt.store.listSchedules(agentId), waiting, (n, v) => versionLive(rt, n, v)), 200);
    })
    .openapi(cancelTurn, async (c) => {
      const { agentId } = c.req.valid("param");
      const body = c.req.valid("json");
      const r = await rt.store.requestCancel({
        agentId,
        ...(body.turnId !== undefined ? { turnId: body.turnId } : {}),
        reason: body.reason ?? DEFAULT_CANCEL_REASON,
        by: callerName(c),
        now: rt.clock.now(),
      });
      const turn = JSON.stringify(body.turnId);
      switch (r.status) {
        case "accepted":
          logGrew(rt, agentId);
          rt.wake(agentId, c.req.raw);
          return c.json({ accepted: true as const, turnId: r.turnId }, 202);
        case "agent_not_found":
          throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
        case "not_active":
          throw new ProblemError("not_active", `Agent "${agentId}" has no active turn to cancel`);
        case "turn_finished":
          throw new ProblemError("turn_finished", `Turn ${turn} of agent "${agentId}" has finished`);
        case "turn_not_started":
          throw new ProblemError(
            "turn_not_started",
            `Turn ${turn} of agent "${agentId}" is still queued; cancel it with DELETE /v1/agents/${agentId}/tasks/<turnId>`,
          );
        case "turn_not_found":
          throw new ProblemError("turn_not_found", `Agent "${agentId}" has no turn ${turn}`);
      }
    })
    .openapi(getTurn, async (c) => {
      const { agentId, turnId } = c.req.valid("param");
      const t = await rt.store.getTurn(agentId, turnId);
      if (!t) {
        if (!(await rt.store.getAgent(agentId))) throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
        throw new ProblemError("turn_not_found", `Agent "${agentId}" has no turn ${JSON.stringify(turnId)}`);
      }
      return c.json({
        agentId,
        turnId,
        status: t.status,
        ...(t.input !== undefined ? { input: t.input } : {}),
        ...(t.runAt !== undefined ? { runAt: runAtIso(t.runAt) } : {}),
        ...(await turnLane(rt, agentId, turnId, t.status)),
      }, 200);
    })
    .openapi(cancelTask, async (c) => {
      const { agentId, turnId } = c.req.valid("param");
      const r = await rt.store.cancelTask({ agentId, turnId, reason: DEFAULT_CANCEL_REASON, by: callerName(c), now: rt.clock.now() });
      const turn = JSON.stringify(turnId);
      switch (r.status) {
        case "cancelled":
          if (!r.already) logGrew(rt, agentId);
          return c.json({ agentId, turnId, status: "cancelled" as const, duplicate: r.already }, 200);
        case "agent_not_found":
          throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
        case "turn_not_found":
          throw new ProblemError("turn_not_found", `Agent "${agentId}" has no turn ${turn}`);
        case "turn_started":
          throw new ProblemError(
            "turn_started",
            `Turn ${turn} of agent "${agentId}" has started; cancel it with POST /v1/agents/${agentId}/cancel`,
          );
        case "turn_finished":
          throw new ProblemError("turn_finished", `Turn ${turn} of agent "${agentId}" has finished`);
      }
    });
}

/** A queued turn's key, priority and `waiting` (routes/waiting.ts); an active turn's key and priority; nothing else. */
async function turnLane(rt: RouteRuntime, agentId: string, turnId: string, status: string) {
  if (status !== "queued" && status !== "active") return {};
  const head = await rt.store.getAgent(agentId);
  if (!head) return {};
  if (status === "active") {
    const task = head.activeTurnId === turnId ? head.currentTask : null;
    return { ...laneOf(task ?? {}) };
  }
  const queued = await rt.store.listQueuedTasks(agentId, TURN_QUEUE_READ);
  const task = queued.find((q) => q.turnId === turnId);
  const waiting = await waitingOf(rt, head, queued, turnId);
  return { ...laneOf(task ?? {}), ...(waiting !== undefined ? { waiting } : {}) };
}

const laneOf = (t: { concurrencyKey?: string; priority?: number }) => ({
  ...(t.concurrencyKey !== undefined ? { concurrencyKey: t.concurrencyKey } : {}),
  ...(t.priority !== undefined ? { priority: t.priority } : {}),
});

/** How far into an agent's queue `GET …/tasks/:turnId` reads to place a queued turn (beyond: `ahead` counts these). */
const TURN_QUEUE_READ = 1_000;

/** A duplicate's answer: the first task's due time while it is queued or running (invariant `delayed-tasks`). */
async function firstRunAt(rt: RouteRuntime, agentId: string, turnId: string): Promise<number | undefined> {
  return (await rt.store.getTurn(agentId, turnId))?.runAt;
}

/** The `Prefer: wait` to apply, in seconds (cut to the cap); null: none asked, or waiting is off. */
function waitSeconds(rt: RouteRuntime, prefer: string | null): number | null {
  const asked = preferredWait([prefer ?? undefined]);
  const cap = rt.maxWaitSeconds ?? DEFAULT_MAX_WAIT_SECONDS;
  if (asked === null || cap <= 0 || asked <= 0) return null;
  return Math.min(asked, cap);
}
