/**
 * Concurrency keys, lanes and priorities in the store (store/port.ts
 * invariants `concurrency-keys`, `fair-lanes`, `priorities`): the checks of
 * a task's key and priority as the store takes them, the limits argument of
 * the scripts, and the answer of `concurrencyUsage` built from per-lane rows
 * (each adapter reads the rows its own way: store/memory/lanes.ts,
 * store/lua/concurrency_usage.lua).
 */
import type { ConcurrencyLimits, ConcurrencyUsage, ConcurrencyUsageRequest, LaneUsage, QueuedTask } from "./port.ts";
import type { InboxTask } from "./types.ts";
import { StoreInputError } from "./keys.ts";

/** The longest concurrency key. */
export const MAX_CONCURRENCY_KEY = 256;
/** The highest priority (seconds ahead; invariant `priorities`). */
export const MAX_PRIORITY = 86_400;

/** A task's key and priority as stored: a key of 1-256 characters without control characters, a whole priority in range. */
export function taskLaneFields(req: { concurrencyKey?: string; priority?: number }): { concurrencyKey?: string; priority?: number } {
  const k = req.concurrencyKey;
  if (k !== undefined && (typeof k !== "string" || k.length === 0 || k.length > MAX_CONCURRENCY_KEY || /[\u0000-\u001f\u007f]/.test(k))) {
    throw new StoreInputError(`Invalid concurrencyKey ${JSON.stringify(k)}: 1-${MAX_CONCURRENCY_KEY} characters, no control characters`);
  }
  const p = req.priority;
  if (p !== undefined && (!Number.isInteger(p) || p < 0 || p > MAX_PRIORITY)) {
    throw new StoreInputError(`Invalid priority ${JSON.stringify(p)}: a whole number from 0 to ${MAX_PRIORITY}`);
  }
  return { ...(k !== undefined ? { concurrencyKey: k } : {}), ...(p !== undefined && p !== 0 ? { priority: p } : {}) };
}

/** The limit of key `key` (its own entry, else "*"; none: undefined). The default lane ("") has none. */
export function limitOf(limits: ConcurrencyLimits | undefined, key: string): number | undefined {
  if (!limits || key === "") return undefined;
  return Object.prototype.hasOwnProperty.call(limits, key) ? limits[key] : limits["*"];
}

/** The limits as the scripts take them: one JSON object of whole numbers from 1 ('' for none). */
export function limitsArg(limits: ConcurrencyLimits | undefined): string {
  if (!limits) return "";
  for (const [k, n] of Object.entries(limits)) {
    if (!Number.isInteger(n) || n < 1) throw new StoreInputError(`Invalid concurrency limit for ${JSON.stringify(k)}: ${JSON.stringify(n)} (a whole number from 1)`);
  }
  return Object.keys(limits).length === 0 ? "" : JSON.stringify(limits);
}

/** One lane's counts as an adapter reads them (a sharded store's rows of one key are summed). */
export interface LaneRow {
  key: string;
  running: number;
  queued: number;
  /** When the lane is parked at its limit, the time it rings at the latest; else 0. */
  parkedUntil: number;
}

/** The answer of `concurrencyUsage` from the rows: lanes merged by key, busiest first, the rest summed into `others`. */
export function usageOf(rows: readonly LaneRow[], req: ConcurrencyUsageRequest): ConcurrencyUsage {
  const by = new Map<string, LaneRow>();
  for (const r of rows) {
    const cur = by.get(r.key);
    by.set(r.key, cur ? { key: r.key, running: cur.running + r.running, queued: cur.queued + r.queued, parkedUntil: Math.max(cur.parkedUntil, r.parkedUntil) } : { ...r });
  }
  if (req.keys) for (const k of req.keys) if (!by.has(k)) by.set(k, { key: k, running: 0, queued: 0, parkedUntil: 0 });
  const lanes = [...by.values()]
    .filter((r) => req.keys !== undefined || r.key === "" || r.running + r.queued > 0)
    .map((r): LaneUsage => {
      const limit = limitOf(req.concurrencyLimits, r.key);
      const atLimit = limit !== undefined && (r.running >= limit || r.parkedUntil > req.now);
      return { key: r.key, running: r.running, queued: r.queued, ...(atLimit ? { atLimit: true } : {}) };
    })
    .sort((x, y) => y.running + y.queued - (x.running + x.queued) || (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
  const max = Math.max(0, Math.floor(req.limit));
  const rest = lanes.slice(max);
  return {
    lanes: lanes.slice(0, max),
    others: { lanes: rest.length, running: rest.reduce((a, r) => a + r.running, 0), queued: rest.reduce((a, r) => a + r.queued, 0) },
  };
}

/** A queued task as `listQueuedTasks` answers it: its turn, times, key and priority. */
export function queuedTaskOf(t: InboxTask): QueuedTask {
  return {
    turnId: t.turnId, enqueuedAt: t.enqueuedAt,
    ...(t.runAt !== undefined ? { runAt: t.runAt } : {}),
    ...(t.concurrencyKey !== undefined ? { concurrencyKey: t.concurrencyKey } : {}),
    ...(t.priority !== undefined ? { priority: t.priority } : {}),
  };
}
