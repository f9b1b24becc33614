/**
 * `Prefer: wait=<seconds>` (RFC 7240) on `POST /v1/agents/:agentId/tasks`:
 * an answer you can wait for.
 *
 * - The preference is read from every `Prefer` header (comma-separated
 *   preferences, `wait=<delta-seconds>`); a malformed one is ignored, as the
 *   RFC asks. The wait is cut to `rt.maxWaitSeconds` (default 60; 0 turns
 *   waiting off, as createWorkersHandler does: its drive starts after the
 *   response).
 * - When the turn ends within the wait, the answer is `200` with the turn's
 *   end (the `task` event of the log: status, output or error, usage) and
 *   `Preference-Applied: wait=<seconds waited for at most>`; otherwise `202`
 *   as without the header (with `Preference-Applied` too, since it did wait).
 * - Waiting is pushed where the store's live channel hears every commit
 *   (`rt.livePushes`): the log is read once at the start and again on each
 *   "log grew" notice that may carry this turn's end (a commit that leaves
 *   the turn running says `turnEnded: false`, one that ends another turn
 *   names it, and neither is read for: store/live.ts),
 *   plus a safety read every WAIT_SAFETY_READ_MS (an end written outside a
 *   commit: a reset, a claim that failed for good). Without such a channel it
 *   reads every `rt.ssePollMs`. The log is read to its end when the wait
 *   begins (the subscription may not be acknowledged yet); after that a read
 *   that returned less than a full page reached the log's end, and the next
 *   read waits for a notice (or the interval).
 * - Only a newly enqueued task waits: a duplicate (idempotency key seen
 *   before) answers 202 at once.
 * - The wait ends early when the client goes away (request signal).
 */
import { z } from "@hono/zod-openapi";
import type { StoredEvent } from "../common/events.ts";
import type { RouteRuntime } from "./runtime.ts";
import { DEFAULTS } from "../common/defaults.ts";

/** The cap on `Prefer: wait` when the gatehouse sets none (seconds). */
export const DEFAULT_MAX_WAIT_SECONDS = DEFAULTS.maxWaitSeconds;
/** Events read at once while waiting. */
const WAIT_READ_PAGE = 200;
/** Reads of the log while waiting on a pushing channel, in case an end came without a notice (ms). */
export const WAIT_SAFETY_READ_MS = 5_000;

/** The `wait` preference in seconds (the first valid one), or null. */
export function preferredWait(headers: readonly (string | undefined)[]): number | null {
  for (const h of headers) {
    if (!h) continue;
    for (const part of h.split(",")) {
      const m = /^\s*wait\s*=\s*"?(\d{1,9})"?\s*(?:;.*)?$/i.exec(part);
      if (m) return Number(m[1]);
    }
  }
  return null;
}

/** The turn's end as the 200 answer carries it. */
export const TaskEnded = z.object({
  agentId: z.string(),
  turnId: z.string(),
  duplicate: z.literal(false),
  status: z.enum(["done", "failed"]).describe("How the turn ended"),
  output: z.unknown().describe("The turn's output (null when it failed)"),
  error: z.object({ reason: z.string(), message: z.string() }).nullable().describe("Why it failed (null when done)"),
  usage: z.object({ inputTokens: z.number().int(), outputTokens: z.number().int(), cost: z.number(), steps: z.number().int() }),
}).openapi("TaskEnded");
export type TaskEnded = z.infer<typeof TaskEnded>;

interface TaskEventData {
  turnId: string | null;
  status: "done" | "failed";
  deliverable: unknown;
  error: { reason: string; message: string } | null;
  usage: TaskEnded["usage"];
}

/** The `task` event that ended `turnId`, among `events`. */
function endOf(events: readonly StoredEvent[], turnId: string): TaskEventData | null {
  for (const e of events) {
    const d = e.data as unknown as TaskEventData | undefined;
    if (e.type === "task" && d && d.turnId === turnId) return d;
  }
  return null;
}

/** Resolves on the next notice for the agent, or after `ms`, or on abort. */
class Wakeup {
  #resolve: (() => void) | null = null;
  #pending = false;

  notify(): void {
    this.#pending = true;
    this.#resolve?.();
  }

  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.#pending || signal.aborted) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.#resolve = null;
        this.#pending = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      this.#resolve = done;
    });
  }
}

export interface TurnWait {
  rt: RouteRuntime;
  agentId: string;
  turnId: string;
  /** Events after this id are read (the log's end before the task was enqueued). */
  after: number;
  waitMs: number;
  signal: AbortSignal;
}

/** Waits for the end of `turnId`; null when the wait ran out (or the client left) first. */
export async function waitForTurnEnd(w: TurnWait): Promise<TaskEnded | null> {
  const { rt, agentId, turnId, signal } = w;
  const pushes = rt.livePushes === true && rt.live !== undefined;
  const wake = new Wakeup();
  const off = pushes ? rt.live!.subscribe(agentId, (m) => m.type === "grew" && m.turnEnded !== false && (m.endedTurn ?? turnId) === turnId && wake.notify()) : null;
  const deadline = Date.now() + w.waitMs;
  let cursor = w.after;
  let first = true;
  try {
    while (!signal.aborted) {
      const events = await rt.store.readEvents(agentId, cursor, WAIT_READ_PAGE);
      const end = endOf(events, turnId);
      if (end) {
        return { agentId, turnId, duplicate: false, status: end.status, output: end.deliverable ?? null, error: end.error, usage: end.usage };
      }
      // A full page may have more behind it: read on at once. So does the first read that found events: the
      // subscription may not have been acknowledged yet (a shared channel), and a notice before that is lost.
      // Any later read that returned less than a page reached the log's end; what comes after is announced.
      const again = events.length >= WAIT_READ_PAGE || (first && events.length > 0);
      first = false;
      if (events.length > 0) cursor = events[events.length - 1].id;
      if (again) continue;
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await wake.wait(Math.min(left, pushes ? WAIT_SAFETY_READ_MS : Math.max(1, rt.ssePollMs)), signal);
    }
    return null;
  } finally {
    off?.();
  }
}
