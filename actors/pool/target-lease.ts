/**
 * Single-consumer worker targets (`svc1_<service>_<scope>`): one consumer
 * process at a time, for stateful services that must not have two
 * processes consuming the same inbox.
 *
 * Invariants:
 * - A process claims agents of a `svc1_` target only while it holds the
 *   target's lease in the store (store/port.ts TargetLeaseRequest); every
 *   other process skips the target (its loops keep consuming its other
 *   targets) and asks again at its next poll.
 * - The holder renews the lease every third of its length while its loops
 *   run, and before a claim when less than half of it is left; a process
 *   that stops releases it, so another takes over at its next poll. A
 *   process that dies keeps it until it expires: the next one takes over
 *   one lease after the last renewal.
 * - The lease is what keeps a second process out; the agents' own leases
 *   and fencing (store/port.ts invariants `exclusive-claims` and `fencing`) still guard every claim,
 *   so a holder that stalls past its lease and lost the target cannot
 *   commit over the new holder's work.
 * - Targets without the `svc1_` prefix are consumed by every process, as
 *   before: no store call is added for them.
 *
 * Time comes from the host's clock; processes whose clocks disagree by
 * more than a lease could overlap, as with agent leases.
 */
import type { Clock, Logger } from "../runtime.ts";
import type { Store } from "../../store/port.ts";
import { describeStoreError } from "./store-error.ts";

/** The prefix of single-consumer targets (seed naming: `svc1_<service>_<scope>`). */
export const SINGLE_CONSUMER_PREFIX = "svc1_";

export function isSingleConsumerTarget(target: string): boolean {
  return target.startsWith(SINGLE_CONSUMER_PREFIX) && target.length > SINGLE_CONSUMER_PREFIX.length;
}

export interface TargetLeases {
  /** Whether this process may claim agents of `target` now (always true for other targets). */
  mayConsume(target: string): Promise<boolean>;
  /** Renews every lease this process holds (the pool's timer calls it). */
  renew(): Promise<void>;
  /** Releases every lease this process holds. */
  release(): Promise<void>;
  /**
   * When another process's lease of `target` runs out (ms), as last answered
   * by the store, while this process waits for it; undefined otherwise. An
   * idle pool sleeps until then rather than polling a target it may not claim.
   */
  heldElsewhereUntil(target: string): number | undefined;
}

export interface TargetLeaseOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Lease length in ms. */
  leaseMs: number;
  /** This process's id (asked for on first use). */
  holder: () => string;
}

/**
 * @example
 * const leases = targetLeases({ store, clock, logger, leaseMs: 15_000, holder: () => "proc-1" });
 * if (await leases.mayConsume("svc1_billing_prod_eu")) await store.claimNext({ ... });
 */
export function targetLeases(opts: TargetLeaseOptions): TargetLeases {
  /** target -> until when this process holds it (as last answered by the store). */
  const held = new Map<string, number>();
  /** target -> the other holder last seen, to log changes only. */
  const waiting = new Map<string, string>();
  /** target -> when the other holder's lease runs out, while this process waits. */
  const elsewhereUntil = new Map<string, number>();

  async function acquire(target: string): Promise<boolean> {
    const r = await opts.store.acquireTargetLease({ workerTarget: target, holder: opts.holder(), leaseMs: opts.leaseMs, now: opts.clock.now() });
    if (r.status === "held") {
      if (!held.has(target)) opts.logger.info("single-consumer target taken", { target, leaseUntil: r.leaseUntil });
      held.set(target, r.leaseUntil);
      waiting.delete(target);
      elsewhereUntil.delete(target);
      return true;
    }
    elsewhereUntil.set(target, r.leaseUntil);
    if (held.delete(target)) opts.logger.warn("single-consumer target lost to another process", { target, holder: r.holder });
    if (waiting.get(target) !== r.holder) {
      opts.logger.info("single-consumer target held by another process; waiting", { target, holder: r.holder, leaseUntil: r.leaseUntil });
      waiting.set(target, r.holder);
    }
    return false;
  }

  return {
    async mayConsume(target) {
      if (!isSingleConsumerTarget(target)) return true;
      const until = held.get(target);
      if (until !== undefined && until - opts.clock.now() > opts.leaseMs / 2) return true;
      return acquire(target);
    },
    heldElsewhereUntil: (target) => elsewhereUntil.get(target),
    async renew() {
      for (const target of [...held.keys()]) {
        try {
          await acquire(target);
        } catch (err) {
          opts.logger.warn("single-consumer target renewal failed", { target, ...describeStoreError(err, opts.store.kind) });
        }
      }
    },
    async release() {
      const targets = [...held.keys()];
      held.clear();
      for (const target of targets) {
        try {
          await opts.store.releaseTargetLease({ workerTarget: target, holder: opts.holder(), now: opts.clock.now() });
        } catch (err) {
          opts.logger.warn("single-consumer target release failed", { target, ...describeStoreError(err, opts.store.kind) });
        }
      }
    },
  };
}
