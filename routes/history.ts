/**
 * `GET /v1/agents/:agentId/history/:eventId`: time travel. The agent as it
 * was right after that event (state, context, persisted snapshot,
 * conversation), rebuilt by replaying its event log through the pure
 * machine (actors/replay/time-travel.ts). Reads only; the head is not used but for
 * its existence and `lastEventId`.
 */
import { EventTrimmedError, HistoryDivergedError, replayThrough } from "../actors/replay/time-travel.ts";
import { defineRoute, json, routeApp } from "./define.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { HistoryParams, HistoryView } from "./debug-schemas.ts";
import { agentState } from "./schemas.ts";
import type { HistoryPoint } from "../actors/replay/time-travel.ts";
import type { StoredEvent } from "../common/events.ts";
import type { Store } from "../store/port.ts";

/** The agent after event `eventId` as the routes answer it; ProblemErrors for unknown agents and events. */
export async function historyOrProblem(
  store: Store,
  agentId: string,
  eventId: number,
): Promise<{ point: HistoryPoint; events: StoredEvent[]; lastEventId: number; head: NonNullable<Awaited<ReturnType<Store["getAgent"]>>> }> {
  const head = await store.getAgent(agentId);
  if (!head) throw new ProblemError("agent_not_found", `Agent "${agentId}" does not exist`);
  if (eventId > head.lastEventId) {
    throw new ProblemError("event_not_found", `Agent "${agentId}" has no event ${eventId} (its last is ${head.lastEventId})`, {
      extra: { lastEventId: head.lastEventId },
    });
  }
  if (eventId <= head.eventsTrimmedThrough) throw trimmedProblem(new EventTrimmedError(eventId, head.eventsTrimmedThrough, agentId));
  try {
    const r = await replayThrough(store, agentId, eventId);
    if (!r) throw new ProblemError("event_not_found", `Agent "${agentId}" has no event ${eventId}`);
    return { ...r, lastEventId: head.lastEventId, head };
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
  summary: "The agent right after one event: state, context, snapshot, messages (rebuilt by replay)",
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
    const { point, lastEventId } = await historyOrProblem(rt.store, agentId, eventId);
    return c.json({
      agentId,
      eventId,
      event: point.event,
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
