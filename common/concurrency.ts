/**
 * Concurrency keys, priorities and concurrency limits as given from outside
 * (store/port.ts invariants `concurrency-keys`, `fair-lanes`, `priorities`):
 * the one set of checks the routes (routes/schemas.ts, routes/task-options.ts),
 * the agent definitions (agents/concurrency-key.ts) and the configuration
 * (`createGatehouse({ concurrencyLimits })`, `GATEHOUSE_CONCURRENCY_LIMITS`)
 * share, so each refuses the same values with the same words.
 *
 * - A concurrency key is a string of 1 to 256 characters (UTF-16 code units)
 *   without control characters (U+0000-U+001F, U+007F-U+009F). The empty
 *   string is not a key: a task without a key runs in the default lane.
 * - A priority is a whole number of seconds from 0 to 86 400 (one day): a
 *   task of priority p is ordered as if its work became ready p seconds
 *   earlier (the aging rule of invariant `priorities`).
 * - Concurrency limits are an object from keys (or `"*"`, the limit of every
 *   key not named) to whole numbers from 1 to 1 000 000.
 *
 * Each check answers the problem in words (naming the value) or null; the
 * caller names the field.
 */

/** The longest concurrency key, in UTF-16 code units. */
export const MAX_CONCURRENCY_KEY_LENGTH = 256;
/** The highest priority: one day ahead, in seconds. */
export const MAX_PRIORITY = 86_400;
/** The highest concurrency limit of one key. */
export const MAX_CONCURRENCY_LIMIT = 1_000_000;
/** Lanes `/metrics` reports one by one by default (the busiest; the rest are summed under `_other`). */
export const DEFAULT_METRICS_LANES = 20;
/** The most lanes `/metrics` may report one by one (`metricsLanes`). */
export const MAX_METRICS_LANES = 1_000;
/** The key under which `/metrics` sums the lanes beyond `metricsLanes`. */
export const OTHER_LANES_KEY = "_other";
/** The key of the limit that applies to every key not named. */
export const DEFAULT_LIMIT_KEY = "*";

/** Control characters: C0, DEL and C1. Written with escapes (no literal quote or control char in the source). */
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** What is wrong with a concurrency key, or null. */
export function concurrencyKeyProblem(v: unknown): string | null {
  if (typeof v !== "string") return `must be a string, got ${describe(v)}`;
  if (v.length < 1 || v.length > MAX_CONCURRENCY_KEY_LENGTH) {
    return `must be 1 to ${MAX_CONCURRENCY_KEY_LENGTH} characters, got ${v.length}`;
  }
  const at = v.search(CONTROL);
  if (at >= 0) return `must not hold control characters (U+${v.charCodeAt(at).toString(16).toUpperCase().padStart(4, "0")} at ${at})`;
  return null;
}

/** What is wrong with a priority, or null. */
export function priorityProblem(v: unknown): string | null {
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0 || v > MAX_PRIORITY) {
    return `must be a whole number of seconds from 0 to ${MAX_PRIORITY}, got ${describe(v)}`;
  }
  return null;
}

/** A problem of a limits object: the message and the key at fault (absent: the whole value). */
export interface LimitsProblem {
  message: string;
  key?: string;
}

/** What is wrong with a concurrency limits object, or null. */
export function concurrencyLimitsProblem(v: unknown): LimitsProblem | null {
  if (v === undefined) return null;
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    return { message: `must be an object from concurrency keys (or "*") to limits, got ${describe(v)}` };
  }
  for (const [key, limit] of Object.entries(v)) {
    if (key !== DEFAULT_LIMIT_KEY) {
      const p = concurrencyKeyProblem(key);
      if (p) return { message: `key ${JSON.stringify(key)} ${p}`, key };
    }
    if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > MAX_CONCURRENCY_LIMIT) {
      return { message: `limit of ${JSON.stringify(key)} must be a whole number from 1 to ${MAX_CONCURRENCY_LIMIT}, got ${describe(limit)}`, key };
    }
  }
  return null;
}

/** The limit of `key` under `limits`: its own entry, else `"*"`, else none (undefined). */
export function limitOf(limits: Readonly<Record<string, number>> | undefined, key: string): number | undefined {
  if (!limits) return undefined;
  return Object.hasOwn(limits, key) ? limits[key] : limits[DEFAULT_LIMIT_KEY];
}

function describe(v: unknown): string {
  if (v === undefined) return "undefined";
  if (typeof v === "function") return "a function";
  try {
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
  } catch {
    return String(v);
  }
}
