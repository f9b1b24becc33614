/**
 * Where a turn's answer starts in the log: the id before its `TASK_STARTED`
 * transition, found by reading back from the log's end in windows, so the
 * cost grows with the turn, not with the log. Bounded: MAX_WINDOWS windows
 * of WINDOW events; a turn longer than that is answered from the oldest
 * window read. A turn not started yet (queued) starts at the log's end.
 */
import type { Store } from "../../store/port.ts";

const WINDOW = 200;
const MAX_WINDOWS = 50;

/** Read events with id > the answer to get the turn from its start. */
export async function turnStart(store: Store, agentId: string, turnId: string): Promise<number> {
  const head = await store.getAgent(agentId);
  if (!head) return 0;
  let end = head.lastEventId;
  const floor = head.eventsTrimmedThrough;
  for (let w = 0; w < MAX_WINDOWS && end > floor; w++) {
    const from = Math.max(floor, end - WINDOW);
    const events = await store.readEvents(agentId, from, end - from);
    for (let i = events.length - 1; i >= 0; i--) {
      const e = events[i];
      const ev = (e.data as { event?: { type?: string; turnId?: string } }).event;
      if (e.type === "transition" && ev?.type === "TASK_STARTED" && ev.turnId === turnId) return e.id - 1;
    }
    end = from;
  }
  return end === floor ? floor : end;
}
