/**
 * The point a fork and `GET .../history/:eventId` take for an event: the
 * agent at the end of the commit that logged it (docs/http.md
 * "GET /v1/agents/:agentId/history/:eventId", docs/architecture.md "What
 * re-runs").
 *
 * Why: a commit logs the events of its effect ahead of the transition that
 * applies it (a model step's `tool_call`, `approval_requested`, `step`,
 * `chunk`; a tool's `tool_result`), and the agent replayed right after one
 * of those events is the agent before that transition: a state no commit
 * stored. Forked there, the fork would run the model step again, the call's
 * deterministic id would repeat, and a tool without `retrySafe` would run
 * again under the `toolCallId` the source already ran it under. At the
 * commit's end the call is recorded and pending, so the fork's rule for
 * pending calls applies (`forked_unresolved` unless `retrySafe` or
 * `rerunPending`, routes/fork.ts).
 *
 * How the commit is found: the host marks every `transition` it commits
 * with `commit: { index, count }` (actors/claim/commit-buffer.ts): its
 * position among the events that commit appended and how many it
 * appended. A commit's events are appended together with consecutive ids
 * and one `at`, so the commit that logged event `e` is the span of the
 * nearest marked transition before or after `e`, among the events with
 * `e`'s `at`, that covers `e`.
 *
 * Invariants (tests/routes/fork-commit-point.int.test.ts, tests/host/time-travel-property.test.ts):
 * - `commitEndOf(e)` >= e, and every event of one commit answers the same
 *   id: that commit's last event. At a commit's last event it is the
 *   identity, so the point there is the snapshot the commit stored.
 * - An event no marked transition covers (a log written before the mark,
 *   events a store operation logged: enqueues, deliveries, decisions,
 *   cancels, a turn ended from outside) is its own point, as before.
 * - Reads only the events between `e` and the nearest transition on each
 *   side that share `e`'s `at`: a commit's length, not the log's.
 */
import type { StoredEvent } from "../../common/events.ts";
import type { Store } from "../../store/port.ts";

/** The ids of the first and last event a commit appended. */
export interface CommitSpan {
  first: number;
  last: number;
}

/** Page size of the reads around an event. */
const PAGE = 64;

/** The span of the commit that logged transition `e`, from its `commit` mark; null when it carries none. */
export function commitSpanOf(e: StoredEvent): CommitSpan | null {
  if (e.type !== "transition") return null;
  const m = (e.data as { commit?: { index?: unknown; count?: unknown } }).commit;
  if (!m || typeof m !== "object") return null;
  const { index, count } = m;
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(count)) return null;
  const i = index as number, n = count as number;
  if (i < 0 || n < 1 || i >= n) return null;
  return { first: e.id - i, last: e.id - i + n - 1 };
}

/**
 * The id of the last event of the commit that logged event `eventId` of `agentId`; `eventId`
 * itself when no marked transition covers it (or the agent has no such event).
 */
export async function commitEndOf(store: Store, agentId: string, eventId: number): Promise<number> {
  const covering = (t: StoredEvent | null): number | null => {
    const s = t && commitSpanOf(t);
    return s && s.first <= eventId && eventId <= s.last ? s.last : null;
  };
  const ahead = await scanAhead(store, agentId, eventId);
  if (!ahead) return eventId;
  const fromAhead = covering(ahead.transition);
  if (fromAhead !== null) return fromAhead;
  if (ahead.event.type === "transition") return eventId;
  return covering(await transitionBefore(store, agentId, ahead.event)) ?? eventId;
}

/** Event `eventId`, and the first transition at or after it among the events with its `at`. */
async function scanAhead(store: Store, agentId: string, eventId: number): Promise<{ event: StoredEvent; transition: StoredEvent | null } | null> {
  let event: StoredEvent | null = null;
  let after = eventId - 1;
  for (;;) {
    const page = await store.readEvents(agentId, after, PAGE);
    if (page.length === 0) return event && { event, transition: null };
    for (const e of page) {
      if (event === null) {
        if (e.id !== eventId) return null;
        event = e;
      } else if (e.at !== event.at) {
        return { event, transition: null };
      }
      if (e.type === "transition") return { event, transition: e };
    }
    after = page[page.length - 1].id;
  }
}

/** The nearest transition before `e` among the events with its `at` (none: null). */
async function transitionBefore(store: Store, agentId: string, e: StoredEvent): Promise<StoredEvent | null> {
  let before = e.id;
  while (before > 1) {
    const from = Math.max(0, before - 1 - PAGE);
    const page = await store.readEvents(agentId, from, before - 1 - from);
    // A log trimmed by retention starts later: nothing before its first kept event.
    const older = page.filter((x) => x.id < before);
    if (older.length === 0) return null;
    for (let i = older.length - 1; i >= 0; i--) {
      const x = older[i];
      if (x.id !== before - 1 || x.at !== e.at) return null;
      if (x.type === "transition") return x;
      before = x.id;
    }
  }
  return null;
}
