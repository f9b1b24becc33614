/**
 * The watchdog: turns tool calls whose resume deadline has passed into
 * timeout results and wakes their agents. It writes through the same
 * first-wins `deliverToolResult` as HTTP, so a result racing the watchdog
 * yields exactly one of result or timeout: whichever the store applies first
 * wins, the other changes nothing (a late result is told `already_resolved`,
 * `resolvedBy: "timeout"`; a late timeout is counted as `alreadyResolved`, or
 * `turnFinished`). It is the one source that may also resolve in-process
 * calls: a tool that never returns still ends in a timeout.
 *
 * A call that waits for a person's approval is ended through `decideApproval`
 * (`timeout`, the tool error `approval_timeout`) once the store refused its
 * timeout with `approval_pending` (store invariant `approval-before-result`);
 * an approved call whose moved deadline has not come (`not_due`: approved
 * after this tick read the index) is left where the approval put it.
 *
 * Nothing can stop it. The due index is read oldest first, so a record that
 * stays due would be offered ahead of every other one at every tick; the
 * watchdog therefore never leaves a record it could not time out where it was:
 * - a record whose call is resolved, whose turn ended, whose call or agent is
 *   unknown, is taken out of the due index (`skipDueToolCall`, retryAt null);
 * - a record whose delivery throws (unreadable data, a failing script) is
 *   pushed back by `retryMs` (default 60 s), behind the records due now.
 * Each such record is counted in `skipped`, logged as `watchdog_skipped` on
 * its agent (when the agent exists) and as a warning. One record's failure,
 * even a failing skip, never stops the others of the tick or later ticks.
 */
import type { Store } from "../../store/port.ts";
import type { Clock, Logger } from "../runtime.ts";

export interface WatchdogTickResult {
  timedOut: number;
  alreadyResolved: number;
  turnFinished: number;
  /** Records taken out of the due index or pushed back because they could not be timed out. */
  skipped: number;
}

export interface WatchdogOptions {
  /** How long a record whose delivery threw waits before it is tried again (ms, default 60 000). */
  retryMs?: number;
  logger?: Logger;
}

export const WATCHDOG_RETRY_MS = 60_000;

export async function watchdogTick(
  store: Store,
  clock: Clock,
  limit = 100,
  opts: WatchdogOptions = {},
): Promise<WatchdogTickResult> {
  const now = clock.now();
  const retryMs = opts.retryMs ?? WATCHDOG_RETRY_MS;
  const due = await store.dueToolCalls(now, limit);
  const out: WatchdogTickResult = { timedOut: 0, alreadyResolved: 0, turnFinished: 0, skipped: 0 };
  const skip = async (d: (typeof due)[number], retryAt: number | null, reason: string) => {
    try {
      const r = await store.skipDueToolCall({ ...d, retryAt, reason, now });
      if (r.status === "skipped") {
        out.skipped++;
        opts.logger?.warn("watchdog skipped a due tool call", { ...d, reason, retryAt });
      }
    } catch (err) {
      // Even the skip failed (the store is down?): the next tick tries again; the others go on now.
      opts.logger?.error("watchdog could not skip a due tool call", { ...d, reason, error: String(err) });
    }
  };
  for (const d of due) {
    let status: string;
    try {
      const r = await store.deliverToolResult({
        agentId: d.agentId,
        turnId: d.turnId,
        toolCallId: d.toolCallId,
        outcome: { ok: false, error: { type: "timeout", message: "No result before the resume deadline", retryable: true } },
        afterExecution: "continue",
        source: "watchdog",
        now,
      });
      status = r.status;
    } catch (err) {
      await skip(d, now + retryMs, `error: ${(err as Error)?.message ?? String(err)}`.slice(0, 500));
      continue;
    }
    if (status === "approval_pending") {
      // Nobody decided before the approval's deadline: the store ends the wait (invariant `first-decision-wins`).
      try {
        status = (await store.decideApproval({ ...d, decision: "timeout", now })).status;
      } catch (err) {
        await skip(d, now + retryMs, `error: ${(err as Error)?.message ?? String(err)}`.slice(0, 500));
        continue;
      }
      if (status === "decided") status = "accepted";
    }
    if (status === "accepted") {
      out.timedOut++;
      opts.logger?.info("watchdog_timeout", { agentId: d.agentId, turnId: d.turnId, toolCallId: d.toolCallId });
      continue;
    }
    // Approved after this tick read the index: the approval moved the record's deadline, and it stays there.
    if (status === "not_due") continue;
    if (status === "conflict") {
      out.alreadyResolved++;
      continue;
    }
    if (status === "duplicate" || status === "already_resolved") out.alreadyResolved++;
    else out.turnFinished++;
    // Normally the store already dropped the record with the result or the turn's end (skip answers
    // `absent`); a record still there would be offered first at every tick.
    await skip(d, null, status);
  }
  return out;
}
