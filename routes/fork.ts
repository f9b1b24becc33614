/**
 * `POST /v1/agents/:agentId/fork`: a new agent from a point of another's
 * history (docs/http.md). The point is rebuilt by replay (routes/history.ts);
 * the store writes the new agent in one operation (`createFork`) and then
 * logs `forked_to` on the source (`recordFork`, one agent's keys per call).
 *
 * Invariants (tests/debug/debug-routes.test.ts):
 * - The source changes by exactly one `forked_to` event (whole-state
 *   comparison of the memory store).
 * - The fork's snapshot and conversation are those of `GET .../history/
 *   :atEventId` of the source: the end of the commit that logged
 *   `atEventId` (`throughEventId`), so a fork at a `tool_call` or
 *   `approval_requested` row carries that call as pending (tests/
 *   fork-commit-point.test.ts). A replay of the fork's log reproduces its
 *   head.
 * - Tool calls pending at the fork point are pending in the fork, so a
 *   delivered result (or the worker, for in-process ones) moves it on. A
 *   call that waited for a person's approval there waits for one again: the
 *   fork's approval is its own (store invariant `first-decision-wins`).
 * - An in-process call pending at the fork point may already have run in the
 *   source (its result not yet committed): the fork never runs it again
 *   under the same id unless its tool is `retrySafe` or the request asks for
 *   `rerunPending`. The fork's task lists such calls (`forkedUnresolved`)
 *   and the worker answers each with the error outcome `forked_unresolved`,
 *   which the model sees (actors/steps/tool-runner.ts).
 * - An existing `newAgentId` is refused (409) and nothing is written.
 * - With auth on, the token must reach both the source and `newAgentId`
 *   (`admin`, routes/auth/access.ts); otherwise 403 and nothing is written.
 */
import { byField } from "../common/by.ts";
import { logGrew } from "./live-feed.ts";
import { BODY_PROBLEMS, defineRoute, json, jsonBody, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { ForkCreated, ForkRequest } from "./debug-schemas.ts";
import { AgentParams, agentState } from "./schemas.ts";
import { historyOrProblem } from "./history.ts";
import { assertAgentAccess, callerName } from "./auth.ts";
import type { InboxTask, ToolCallApproval } from "../store/types.ts";

/** States in which a worker has work without mail. */
const WORKING = new Set(["running", "verifying", "revising"]);

const forkAgent = defineRoute({
  method: "post",
  path: "/v1/agents/{agentId}/fork",
  operationId: "forkAgent",
  summary: "Fork a new agent from a point of this agent's history",
  description: "The fork gets the snapshot and conversation right after `atEventId`, optionally another definition; " +
    "both logs record the fork (`forked_from`, `forked_to`); the source is otherwise untouched.",
  tags: ["debugging"],
  request: { params: AgentParams, body: jsonBody(ForkRequest) },
  responses: { 201: json("The fork", ForkCreated) },
}, [...BODY_PROBLEMS, "invalid_agent_id", "agent_not_found", "event_not_found", "event_trimmed", "agent_exists", "unknown_agent_definition", "history_diverged"], "admin");

export function forkRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(forkAgent, async (c) => {
    const { agentId } = c.req.valid("param");
    const body = c.req.valid("json");
    // The new agent must be under the token's tenants too (403 `forbidden`; auth off: no check).
    assertAgentAccess(c, body.newAgentId);
    let agentName: string | undefined;
    let workerTarget: string | undefined;
    if (body.agent !== undefined) {
      const def = rt.agents.get(body.agent);
      if (!def) throw new ProblemError("unknown_agent_definition", `No agent definition is named ${JSON.stringify(body.agent)}`);
      agentName = def.name;
      workerTarget = def.workerTarget;
    }
    if (await rt.store.getAgent(body.newAgentId)) {
      throw new ProblemError("agent_exists", `Agent "${body.newAgentId}" exists; a fork needs a new id`);
    }
    // The point is the end of the commit that logged `atEventId` (routes/history.ts): never between a call's event and its transition.
    const { point, events, head, throughEventId } = await historyOrProblem(rt.store, agentId, body.atEventId);
    agentName ??= head.agentName;
    workerTarget ??= rt.agents.get(head.agentName)?.workerTarget ?? head.workerTarget;

    const now = rt.clock.now();
    const turnId = point.activeTurnId;
    let currentTask: InboxTask | null = null;
    let input: unknown;
    const toolCalls: Array<{ turnId: string; toolCallId: string; name: string; args: unknown; external: boolean; deadline: number; approval?: ToolCallApproval }> = [];
    if (turnId !== null) {
      const enq = events.find((e) => e.type === "task_enqueued" && e.turnId === turnId);
      const options = (enq?.data.options ?? {}) as InboxTask["options"];
      currentTask = { turnId, options, enqueuedAt: enq?.at ?? now };
      input = (await rt.store.getTurn(agentId, turnId))?.input ?? null;
      const records = new Map((await rt.store.getToolCalls(agentId, turnId)).map((r) => [r.toolCallId, r]));
      for (const [toolCallId, p] of Object.entries(point.context.pending)) {
        const rec = records.get(toolCallId);
        // The call's time budget, from the record when there is one, restarts at the fork.
        const budget = rec ? rec.deadline - rec.recordedAt : p.deadline - point.event.at;
        // A call that waited for approval at the fork point waits again: the fork's approval is its own.
        const approval = p.approval ? { approval: { status: "pending" as const, runMs: Math.max(1, rec?.approval?.runMs ?? budget) } } : {};
        toolCalls.push({ turnId, toolCallId, name: p.name, args: p.args, external: p.external, deadline: now + Math.max(0, budget), ...approval });
      }
    }
    const inProcessPending = toolCalls.some((t) => !t.external);
    if (currentTask) {
      // The source's list (a fork of a fork) never carries over: this fork decides for its own point.
      const { forkedUnresolved: _inherited, ...options } = currentTask.options;
      const tools = rt.agents.get(agentName)?.tools ?? [];
      const unresolved = body.rerunPending === true ? [] : toolCalls
        .filter((t) => !t.external && tools.find((x) => x.name === t.name)?.retrySafe !== true)
        .map((t) => t.toolCallId);
      currentTask = { ...currentTask, options: unresolved.length > 0 ? { ...options, forkedUnresolved: unresolved } : options };
    }
    const runnableAt = WORKING.has(point.state) || (point.state === "waiting-tools" && inProcessPending) ? now : null;

    const r = await rt.store.createFork({
      agentId: body.newAgentId,
      agentName,
      workerTarget,
      snapshot: point.snapshot,
      state: point.state,
      activeTurnId: turnId,
      currentTask,
      ...(turnId !== null ? { input } : {}),
      messages: point.messages,
      toolCalls,
      event: {
        type: "forked_from",
        data: { agentId, atEventId: body.atEventId, throughEventId, snapshot: point.snapshot, messageCount: point.messages.length, ...byField(callerName(c)) },
      },
      runnableAt,
      now,
    });
    if (r.status === "exists") throw new ProblemError("agent_exists", `Agent "${body.newAgentId}" exists; a fork needs a new id`);
    const rec = await rt.store.recordFork({
      agentId,
      event: { type: "forked_to", data: { agentId: body.newAgentId, atEventId: body.atEventId, ...byField(callerName(c)) } },
      now,
    });
    logGrew(rt, agentId);
    logGrew(rt, body.newAgentId);
    if (runnableAt !== null) rt.wake(body.newAgentId, c.req.raw);
    return c.json({
      agentId: body.newAgentId,
      forkedFrom: { agentId, atEventId: body.atEventId, throughEventId, eventId: rec.status === "recorded" ? rec.eventId : 0 },
      agent: agentName,
      state: agentState(point.state),
      activeTurnId: turnId,
      pendingToolCalls: toolCalls.map((t) => ({ turnId: t.turnId, toolCallId: t.toolCallId, name: t.name, deadlineMs: t.deadline })),
    }, 201);
  });
}
