/**
 * Why a queued task waits (`waiting` of `GET /v1/agents/:agentId/tasks/:turnId`
 * and of the agent view; docs/http.md, "Why a task waits"). Read from the
 * store at the time of the request (any process answers it), so it is a
 * reading, not a promise: the next claim may change it.
 *
 * For a queued task, in this order, the first that holds:
 * 1. `{ for: "run_at", runAt }`: a delayed task not due yet (store/port.ts
 *    invariant `delayed-tasks`).
 * 2. `{ for: "turn", ahead }`: the agent's own work comes first: `ahead` is
 *    the number of the agent's turns that start before it, its active turn
 *    counted (one turn at a time per agent; the tasks ahead in its queue).
 * 3. `{ for: "concurrency_key", key, limit, running }`: it is next for its
 *    agent and its key's lane is at its limit (`running >= limit`,
 *    invariant `concurrency-keys`): it starts when a turn of that key ends
 *    or a crashed worker's lease under the key runs out.
 * 4. `{ for: "lane", key, queued }`: it is next for its agent and may start
 *    now: it waits for a worker loop. `key` is its lane ("" for tasks without
 *    a key), `queued` the agents with due work in that lane no worker holds
 *    (itself included); lanes with due work take turns (invariant
 *    `fair-lanes`), and inside a lane priority orders (invariant
 *    `priorities`).
 */
import { limitOf } from "../common/concurrency.ts";
import type { QueuedTask } from "../store/port.ts";
import type { AgentHead } from "../store/types.ts";
import type { RouteRuntime } from "./runtime.ts";

export type Waiting =
  | { for: "run_at"; runAt: string }
  | { for: "turn"; ahead: number }
  | { for: "concurrency_key"; key: string; limit: number; running: number }
  | { for: "lane"; key: string; queued: number }
  /** The agent view only: its active turn's definition version, which no live process has (actors/host/versions.ts). */
  | { for: "version"; version: string };

/**
 * Why the queued task `turnId` of `head` waits; `queued` is the agent's queue
 * as listed (in start order); a task beyond the list counts the listed ones
 * ahead of it (a lower bound). Undefined when the task is not queued.
 */
export async function waitingOf(
  rt: Pick<RouteRuntime, "store" | "clock" | "concurrencyLimits">,
  head: AgentHead,
  queued: readonly QueuedTask[],
  turnId: string,
): Promise<Waiting | undefined> {
  const now = rt.clock.now();
  const at = queued.findIndex((t) => t.turnId === turnId);
  const t = at >= 0 ? queued[at] : undefined;
  if (t?.runAt !== undefined && t.runAt > now) return { for: "run_at", runAt: new Date(t.runAt).toISOString() };
  const ahead = (at >= 0 ? at : queued.length) + (head.activeTurnId !== null ? 1 : 0);
  if (ahead > 0 || t === undefined) return { for: "turn", ahead: Math.max(ahead, 1) };
  const key = t.concurrencyKey ?? "";
  const usage = await rt.store.concurrencyUsage({
    workerTarget: head.workerTarget, now, limit: 1, keys: [key],
    ...(rt.concurrencyLimits !== undefined ? { concurrencyLimits: rt.concurrencyLimits } : {}),
  });
  const lane = usage.lanes.find((l) => l.key === key);
  const limit = key === "" ? undefined : limitOf(rt.concurrencyLimits, key);
  const running = lane?.running ?? 0;
  if (limit !== undefined && (running >= limit || lane?.atLimit === true)) return { for: "concurrency_key", key, limit, running };
  return { for: "lane", key, queued: Math.max(lane?.queued ?? 0, 1) };
}
