/**
 * The errors of time travel (actors/replay/time-travel.ts, `GET .../history/:eventId`).
 * @module
 */
import { GatehouseError } from "./base.ts";

/** The event was removed by retention: the log (and time travel) starts after `trimmedThrough`. */
export class EventTrimmedError extends GatehouseError {
  declare readonly code: "event_trimmed";
  constructor(readonly eventId: number, readonly trimmedThrough: number, agentId: string) {
    super(
      "event_trimmed",
      `Cannot show event ${eventId} of agent "${agentId}": retention removed events 1-${trimmedThrough}; time travel starts after event ${trimmedThrough}`,
    );
    this.name = "EventTrimmedError";
  }
}

/** The log holds a transition the machine does not take the same way (a changed machine, a corrupt log). */
export class HistoryDivergedError extends GatehouseError {
  declare readonly code: "history_diverged";
  readonly eventId: number;
  constructor(eventId: number, message: string) {
    super("history_diverged", message);
    this.name = "HistoryDivergedError";
    this.eventId = eventId;
  }
}
