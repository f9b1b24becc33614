/**
 * The watchdog: turns tool calls whose resume deadline has passed into
 * timeout results and wakes their agents. It writes through the same
 * first-wins `deliverToolResult` as HTTP, so a result racing the watchdog
 * yields exactly one of result or timeout: whichever the store applies first
 * wins, the other answers `duplicate` (or `turn_finished`) and changes nothing.
 */
import type { Store } from "../store/port.ts";
import type { Clock } from "./runtime.ts";

export interface WatchdogTickResult {
  timedOut: number;
  alreadyResolved: number;
  turnFinished: number;
}

export async function watchdogTick(store: Store, clock: Clock, limit = 100): Promise<WatchdogTickResult> {
  const now = clock.now();
  const due = await store.dueToolCalls(now, limit);
  const out: WatchdogTickResult = { timedOut: 0, alreadyResolved: 0, turnFinished: 0 };
  for (const d of due) {
    const r = await store.deliverToolResult({
      agentId: d.agentId,
      turnId: d.turnId,
      toolCallId: d.toolCallId,
      outcome: { ok: false, error: { type: "timeout", message: "No result before the resume deadline", retryable: true } },
      afterExecution: "continue",
      source: "watchdog",
      now,
    });
    if (r.status === "accepted") out.timedOut++;
    else if (r.status === "duplicate") out.alreadyResolved++;
    else out.turnFinished++;
  }
  return out;
}
