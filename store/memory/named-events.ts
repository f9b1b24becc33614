/**
 * Named events in the memory store (store/port.ts `NamedEvents`, invariant
 * `named-event-waits`); store/lua/event_waits.lua is its Redis twin.
 */
import type { EventWaitsRequest, EventWaitsResult } from "../port.ts";
import { checkEventWaitsRequest, EVENT_ARRIVAL_KEPT_MS, EVENT_WAITS_LIMIT } from "../named-events.ts";
import type { MemoryState } from "./state.ts";

export async function eventWaits(s: MemoryState, req: EventWaitsRequest): Promise<EventWaitsResult> {
  const { waits, namedEvents, atomic, w } = s;
  checkEventWaitsRequest(req);
  return atomic((): EventWaitsResult => {
    for (const d of req.drop ?? []) w.mapDelete(waits, `${req.name}\n${d.agentId}\n${d.turnId}\n${d.toolCallId}`);
    const first = namedEvents.get(req.eventId);
    const since = first !== undefined && first + EVENT_ARRIVAL_KEPT_MS > req.now ? first : req.now;
    if (since === req.now) w.mapSet(namedEvents, req.eventId, req.now);
    const prefix = `${req.name}\n`;
    const found = [...waits.entries()]
      .filter(([k, at]) => k.startsWith(prefix) && at <= since)
      .sort(([k1, t1], [k2, t2]) => t1 - t2 || (k1 < k2 ? -1 : k1 > k2 ? 1 : 0))
      .slice(0, EVENT_WAITS_LIMIT)
      .map(([k]) => {
        const [, agentId, turnId, toolCallId] = k.split("\n");
        return { agentId, turnId, toolCallId };
      });
    return { since, waits: found };
  });
}
