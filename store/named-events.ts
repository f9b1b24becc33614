/**
 * What both adapters of `NamedEvents` (store/port.ts, invariant
 * `named-event-waits`) check and bound alike.
 */
import type { EventWaitsRequest } from "./port.ts";
import { isEventName } from "../common/event-name.ts";
import { StoreInputError } from "./keys.ts";

/** How long an event's first arrival is kept (ms): a retry within it sees the same waits. */
export const EVENT_ARRIVAL_KEPT_MS = 86_400_000;
/** The most waits of one name one delivery reaches per home. */
export const EVENT_WAITS_LIMIT = 1_000;

export function checkEventWaitsRequest(req: EventWaitsRequest): void {
  if (!isEventName(req.name)) throw new StoreInputError(`Invalid event name ${JSON.stringify(req.name)}`);
  if (typeof req.eventId !== "string" || req.eventId === "" || req.eventId.length > 256) {
    throw new StoreInputError(`Invalid event id ${JSON.stringify(req.eventId)}`);
  }
}

