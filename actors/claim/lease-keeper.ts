/**
 * The lease of one claim (actors/host/run-claim.ts): renewed on a timer through long
 * model calls and tools, checked against the worker's own clock, and watched
 * for mail that arrives while the claim runs.
 *
 * Invariants:
 * - `leaseUntil` is the lease as last confirmed by the store: the claim, a
 *   commit that kept the lease (`confirm`), a renewal. Nothing else moves it.
 * - Once the confirmed lease has run out by the worker's clock, the attempt
 *   aborts at the first check (`lapsed()`: the renew tick, the start of every
 *   in-process tool, every read of the tool signal's `aborted` or call of its
 *   `throwIfAborted`), without waiting for a store round trip. A renewal that
 *   answers `lost` aborts too.
 * - The tool signal fires with the attempt's abort and never before it, made
 *   at its first read or not at all (tests/host/lease-keeper-tool-signal.test.ts); the
 *   host's own reads of the attempt's signal stay plain reads.
 * - Mail that arrives while a claim runs is not lost in a long turn: the
 *   renewal notices it (`mailWaiting`) and the claim hands the agent back at
 *   the next step boundary, so the next claim applies it (a cancel takes
 *   effect). Mail of the claim's own batch counts until the first commit
 *   acknowledges it.
 * - A renewal that meets a store outage (a Redis Cluster failing over:
 *   `CLUSTERDOWN`, `MOVED`, `TRYAGAIN`, a dropped connection) is retried
 *   until it answers or the confirmed lease runs out (actors/claim/store-retry.ts);
 *   one renewal runs at a time.
 * - `stop()` ends the renewals; the host calls it when the claim ends, however
 *   it ends.
 */
import type { Store } from "../../store/port.ts";
import type { Clock, Logger } from "../runtime.ts";
import { retryWithinLease } from "./store-retry.ts";

export interface LeaseKeeperOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  agentId: string;
  workerId: string;
  epoch: number;
  leaseMs: number;
  /** The lease end the claim was given. */
  leaseUntil: number;
  /** The attempt's abort: fired here when the lease is lost or has run out. */
  abort: AbortController;
  /** Mail items the claim took with it (pending until the first commit acknowledges them). */
  claimedMail: number;
  /** Commits applied so far by this claim. */
  commits: () => number;
}

export interface LeaseKeeper {
  /** The signal in-process tools get: reading it is a lease check (see the comment in startLeaseKeeper). */
  readonly toolSignal: AbortSignal;
  /** Mail arrived for the agent after the claim took its batch: hand the agent back at the next step boundary. */
  readonly mailWaiting: boolean;
  /**
   * True once this attempt must stop: fenced, or the lease as last confirmed has run out (then it
   * aborts here, at once, without waiting for the renew tick or a store round trip).
   */
  lapsed(): boolean;
  /** The lease end as last confirmed by the store. */
  readonly until: number;
  /** A commit that kept the lease confirmed it until `until`. */
  confirm(until: number): void;
  /** Ends the renewals. */
  stop(): void;
}

/** Starts renewing the lease of a claim (every third of `leaseMs`, at least every 50 ms). */
export function startLeaseKeeper(o: LeaseKeeperOptions): LeaseKeeper {
  const { store, clock, logger, agentId, workerId, epoch, abort } = o;
  // Keep the lease alive through long model calls and tools, and notice mail that arrives meanwhile.
  let mailWaiting = false;
  const renewEvery = Math.max(50, Math.floor(o.leaseMs / 3));
  // The lease as last confirmed by the store (claim, kept-lease commits, renewals).
  let leaseUntil = o.leaseUntil;
  function leaseLapsed(): boolean {
    if (!abort.signal.aborted && clock.now() >= leaseUntil) abort.abort();
    return abort.signal.aborted;
  }
  // Made at the first read (a claim whose tools never read it makes none: an AbortController and two
  // own properties cost more than the rest of a claim's lease keeping).
  let toolSignal: AbortSignal | undefined;
  // A renewal retried through an outage may outlast the interval: the ticks meanwhile skip.
  let renewing = false;
  const renewTimer = setInterval(async () => {
    if (abort.signal.aborted || renewing) return;
    // A process that was paused or starved (SIGSTOP, a long GC, a blocked event loop) wakes up with
    // its lease run out and maybe another worker owning the agent. Abort here, without the round
    // trip a renewal needs (the store would answer "lost"), so effects whose timers fall due after
    // this tick find the signal fired. A timer due earlier runs first; it meets the lease check in
    // `toolSignal` and in the tool runner (actors/steps/tool-runner.ts) instead, and its commit would be
    // refused anyway.
    if (leaseLapsed()) return;
    renewing = true;
    try {
      const r = await retryWithinLease(() => store.renewLease({ agentId, workerId, epoch, leaseMs: o.leaseMs, now: clock.now() }), {
        kind: store.kind, clock, logger, leaseUntil: () => leaseUntil, leaseMs: o.leaseMs, signal: abort.signal, what: "renewLease", agentId,
      });
      if (r.status === "lost") abort.abort();
      else leaseUntil = r.leaseUntil;
      if (r.status !== "lost" && !mailWaiting) {
        // Mail of our own batch counts until the first commit acknowledges it. A read that races
        // that commit can only cause one needless hand-back, never a missed one.
        const h = await store.getAgent(agentId);
        mailWaiting = (h?.pendingMail ?? 0) > (o.commits() === 0 ? o.claimedMail : 0);
      }
    } catch (err) {
      logger.warn("lease renewal failed", { agentId, error: String(err) });
    } finally {
      renewing = false;
    }
  }, renewEvery);

  return {
    get toolSignal() {
      return toolSignal ??= leaseCheckingSignal(abort, leaseLapsed);
    },
    get mailWaiting() {
      return mailWaiting;
    },
    lapsed: leaseLapsed,
    get until() {
      return leaseUntil;
    },
    confirm(until: number) {
      leaseUntil = until;
    },
    stop() {
      clearInterval(renewTimer);
    },
  };
}

/**
 * The signal tools get. A process paused (SIGSTOP) or starved past its lease wakes with every
 * overdue timer firing in order of due time, so a tool timer set while the lease was still valid
 * (an `await sleep(0)`, a short poll) runs before the renew tick and before any timer bound to the
 * lease end: its tool would read `signal.aborted === false` and carry on with its side effect.
 * Reading `aborted` (or calling throwIfAborted) is therefore itself a lease check (`leaseLapsed`):
 * the first tool that looks after the wake-up fires the abort for every tool of the claim.
 * A signal of its own (the host's reads of abort.signal stay plain), fired with the attempt's abort.
 */
function leaseCheckingSignal(abort: AbortController, leaseLapsed: () => boolean): AbortSignal {
  const toolAbort = new AbortController();
  // Made after the abort fired (a lazy first read), it starts fired.
  if (abort.signal.aborted) toolAbort.abort();
  else abort.signal.addEventListener("abort", () => toolAbort.abort(), { once: true });
  const toolSignal = toolAbort.signal;
  const aborted = Object.getOwnPropertyDescriptor(AbortSignal.prototype, "aborted")!.get!;
  const throwIfAborted = AbortSignal.prototype.throwIfAborted;
  Object.defineProperty(toolSignal, "aborted", {
    configurable: true,
    get(this: AbortSignal) {
      leaseLapsed();
      return aborted.call(this);
    },
  });
  Object.defineProperty(toolSignal, "throwIfAborted", {
    configurable: true,
    value(this: AbortSignal) {
      leaseLapsed();
      throwIfAborted.call(this);
    },
  });
  return toolSignal;
}
