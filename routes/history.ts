/**
 * `GET /v1/agents/:agentId/history/:eventId`: time travel. The agent as it
 * was at the end of the commit that logged that event (state, context,
 * persisted snapshot, conversation), rebuilt by replaying its event log
 * through the pure machine (actors/replay/time-travel.ts). Reads only; the
 * head is not used but for its existence and `lastEventId`.
 *
 * Invariant (tests/routes/fork-commit-point.int.test.ts): the point of every event of
 * one commit is that commit's end (`throughEventId`, its last event;
 * actors/replay/commit-point.ts), never a state between the events one
 * commit wrote; a fork (routes/fork.ts) takes exactly this point.
 */
import { EventTrimmedError, HistoryDivergedError, replayThrough } from "../actors/replay/time-travel.ts";
import { commitEndOf } from "../actors/replay/commit-point.ts";
import { defineRoute, json, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { HistoryParams, HistoryView } from "./debug-schemas.ts";
import { agentState } from "./schemas.ts";
import type { HistoryPoint } from "../actors/replay/time-travel.ts";
import type { StoredEvent } from "../common/events.ts";
import type { Store } from "../store/port.ts";

/**
 * The agent at the end of the commit that logged event `eventId` (`throughEventId`) as the routes answer
 * it, and `event`, event `eventId` itself; ProblemErrors for unknown agents and events.
 */
export async function historyOrProblem(
  store: Store,
  agentId: string,
  eventId: number,
): Promise<{
  point: HistoryPoint; event: StoredEvent; throughEventId: number; events: StoredEvent[]; lastEventId: number;
  head: NonNullable<Awaited<ReturnType<Store["getAgent"]>>>;
}> {
  const head = await store.getAgent(agentId);
  if (!head) throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
  if (eventId > head.lastEventId) {
    throw new ProblemError("event_not_found", `Agent "${agentId}" has no event ${eventId} (its last is ${head.lastEventId})`, {
      extra: { lastEventId: head.lastEventId },
    });
  }
  if (eventId <= head.eventsTrimmedThrough) throw trimmedProblem(new EventTrimmedError(eventId, head.eventsTrimmedThrough, agentId));
  try {
    const throughEventId = await commitEndOf(store, agentId, eventId);
    const r = await replayThrough(store, agentId, throughEventId);
    const event = r?.events.find((e) => e.id === eventId);
    if (!r || !event) throw new ProblemError("event_not_found", `Agent "${agentId}" has no event ${eventId}`);
    return { ...r, event, throughEventId, lastEventId: head.lastEventId, head };
  } catch (err) {
    if (err instanceof EventTrimmedError) throw trimmedProblem(err);
    if (err instanceof HistoryDivergedError) {
      throw new ProblemError("history_diverged", err.message, { extra: { eventId: err.eventId } });
    }
    throw err;
  }
}

const getAgentHistory = defineRoute({
  method: "get",
  path: "/v1/agents/{agentId}/history/{eventId}",
  operationId: "getAgentHistory",
  summary: "The agent at the end of the commit that logged one event: state, context, snapshot, messages (rebuilt by replay)",
  tags: ["debugging"],
  request: { params: HistoryParams },
  responses: { 200: json("The agent after the event", HistoryView) },
}, ["validation_failed", "invalid_agent_id", "agent_not_found", "event_not_found", "event_trimmed", "history_diverged"], "read");

/** 410 `event_trimmed`: the event is before the log's trimmed point. */
export function trimmedProblem(err: EventTrimmedError): ProblemError {
  return new ProblemError("event_trimmed", err.message, { extra: { trimmedThrough: err.trimmedThrough } });
}

export function historyRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(getAgentHistory, async (c) => {
    const { agentId, eventId } = c.req.valid("param");
    const { point, event, throughEventId, lastEventId } = await historyOrProblem(rt.store, agentId, eventId);
    return c.json({
      agentId,
      eventId,
      throughEventId,
      event,
      state: agentState(point.state),
      activeTurnId: point.activeTurnId,
      context: point.context,
      snapshot: point.snapshot,
      messages: point.messages,
      messagesFrom: point.messagesFrom,
      lastEventId,
    }, 200);
  });
}
