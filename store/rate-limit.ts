/**
 * The arithmetic of rate-limit buckets (GCRA), shared by the memory store and
 * the script arguments of store/lua/rate_limit.lua, so both compute the same
 * numbers. Times are integers in microseconds: `now` in ms times 1 000 stays
 * exact in a double until the year 2255.
 *
 * A bucket of `limit` requests per `periodMs` has the emission interval
 * `T = floor(periodMs * 1000 / limit)` (at least 1 us) and the tolerance
 * `tau = periodMs * 1000`. With TAT the stored theoretical arrival time
 * (now when absent or past), a request at `now` is admitted when
 * `max(TAT, now) + T - tau <= now`, and then TAT becomes `max(TAT, now) + T`.
 * So `limit` requests pass at once, then one every T.
 */
import type { RateLimitBucket } from "./port.ts";
import { checkBucketKey, StoreInputError } from "./keys.ts";

/** Checks the buckets; answers each one's emission interval and tolerance (us) as script arguments. */
export function gcraArgs(buckets: readonly RateLimitBucket[]): { intervals: string[]; tolerances: string[] } {
  if (!Array.isArray(buckets) || buckets.length > 8) throw new StoreInputError("A rate-limit call takes 0 to 8 buckets");
  const intervals: string[] = [];
  const tolerances: string[] = [];
  for (const b of buckets) {
    checkBucketKey(b.key);
    if (!Number.isSafeInteger(b.limit) || b.limit < 1 || b.limit > 1_000_000) {
      throw new StoreInputError(`Cannot use rate limit ${b.limit} of bucket ${JSON.stringify(b.key.slice(0, 80))}: it must be an integer from 1 to 1 000 000`);
    }
    if (!Number.isSafeInteger(b.periodMs) || b.periodMs < 1 || b.periodMs > 86_400_000) {
      throw new StoreInputError(`Cannot use period ${b.periodMs} ms of bucket ${JSON.stringify(b.key.slice(0, 80))}: it must be an integer from 1 to 86 400 000`);
    }
    intervals.push(String(Math.max(1, Math.floor((b.periodMs * 1000) / b.limit))));
    tolerances.push(String(b.periodMs * 1000));
  }
  return { intervals, tolerances };
}
