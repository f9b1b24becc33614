/**
 * `GET /v1/agents/:agentId/history/:eventId`: time travel. The agent as it
 * was right after that event (state, context, persisted snapshot,
 * conversation), rebuilt by replaying its event log through the pure
 * machine (actors/time-travel.ts). Reads only; the head is not used but for
 * its existence and `lastEventId`.
 */
import { Hono } from "hono";
import { EventTrimmedError, HistoryDivergedError, replayThrough } from "../actors/time-travel.ts";
import { validate } from "./body.ts";
import type { RouteModule } from "./module.ts";
import { ProblemError } from "./problem.ts";
import type { RouteRuntime } from "./runtime.ts";
import { HistoryParams, HistoryView } from "./debug-schemas.ts";
import type { HistoryPoint } from "../actors/time-travel.ts";
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

/** 410 `event_trimmed`: the event is before the log's trimmed point. */
export function trimmedProblem(err: EventTrimmedError): ProblemError {
  return new ProblemError("event_trimmed", err.message, { extra: { trimmedThrough: err.trimmedThrough } });
}

export function historyRoutes(rt: RouteRuntime): RouteModule {
  const app = new Hono();

  app.get("/v1/agents/:agentId/history/:eventId", async (c) => {
    const agentId = c.req.param("agentId");
    const { eventId } = validate(HistoryParams, { eventId: c.req.param("eventId") }, "path");
    const { point, lastEventId } = await historyOrProblem(rt.store, agentId, eventId);
    return c.json({
      agentId,
      eventId,
      event: point.event,
      state: point.state,
      activeTurnId: point.activeTurnId,
      context: point.context,
      snapshot: point.snapshot,
      messages: point.messages,
      messagesFrom: point.messagesFrom,
      lastEventId,
    });
  });

  return {
    app,
    operations: [{
      method: "get",
      path: "/v1/agents/:agentId/history/:eventId",
      operationId: "getAgentHistory",
      summary: "The agent right after one event: state, context, snapshot, messages (rebuilt by replay)",
      tags: ["debugging"],
      responses: { 200: { description: "The agent after the event", schema: { name: "HistoryView", schema: HistoryView } } },
      problems: ["validation_failed", "invalid_agent_id", "agent_not_found", "event_not_found", "event_trimmed", "history_diverged"],
    }],
  };
}
