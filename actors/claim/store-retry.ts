/**
 * The store calls a claim cannot do without, lease renewals and commits
 * (actors/claim/lease-keeper.ts, actors/claim/commit-buffer.ts), retried through a short
 * store outage while the claim's lease lasts: a Redis Cluster failing over
 * answers `CLUSTERDOWN`, `MOVED` or `TRYAGAIN` (or ioredis gives up after its
 * own redirections) for the seconds the replica needs to take over, and a
 * claim that gave up at the first refusal lost the agent although nothing
 * else had taken it.
 *
 * Invariants:
 * - Only outages are retried (store/outage.ts `isOutageError`: connection
 *   errors, timeouts, Cluster redirections and `CLUSTERDOWN`/`TRYAGAIN`);
 *   an error that repeats (a script error, bad input, anything of the
 *   memory store) is thrown at once.
 * - Never past the lease as last confirmed, by the worker's clock, and never
 *   once the attempt aborted: then the last error is thrown, as before.
 *   Never longer in real time than one lease either, so a clock that stands
 *   still cannot hold a claim in the loop.
 * - Retrying is safe. A renewal only extends the claim's own lease (epoch
 *   fenced). A commit is a compare-and-set on epoch and version: one that
 *   was applied although its reply was lost is refused the second time
 *   (`conflict`, reason `version`), which stops the attempt like any refused
 *   commit; what it carried is stored, and nothing runs again.
 */
import { abortableSleep } from "../../common/sleep.ts";
import { isOutageError } from "../../store/outage.ts";
import type { Store } from "../../store/port.ts";
import type { Clock, Logger } from "../runtime.ts";

export interface LeaseRetryOptions {
  kind: Store["kind"];
  clock: Clock;
  logger: Logger;
  /** The lease end as last confirmed (read before every retry). */
  leaseUntil: () => number;
  /** The lease length: the bound of real time spent waiting between attempts. */
  leaseMs: number;
  /** The attempt's abort. */
  signal: AbortSignal;
  /** For the log: what is retried, and for whom. */
  what: string;
  agentId: string;
}

/** First wait between attempts (ms), doubled per attempt up to RETRY_MAX_MS. */
export const RETRY_FIRST_MS = 50;
export const RETRY_MAX_MS = 500;

/** Runs `call`, and again after an outage error while the lease lasts (see the invariants above). */
export async function retryWithinLease<T>(call: () => Promise<T>, o: LeaseRetryOptions): Promise<T> {
  let waitMs = RETRY_FIRST_MS;
  let waited = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (!isOutageError(err, o.kind)) throw err;
      const left = o.leaseUntil() - o.clock.now();
      if (o.signal.aborted || left <= waitMs || waited + waitMs > o.leaseMs) throw err;
      o.logger.info("store_call_retried", { agentId: o.agentId, call: o.what, attempt, waitMs, leaseLeftMs: left, error: String(err) });
      await abortableSleep(waitMs, o.signal);
      if (o.signal.aborted) throw err;
      waited += waitMs;
      waitMs = Math.min(RETRY_MAX_MS, waitMs * 2);
    }
  }
}
