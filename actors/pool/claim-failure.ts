/**
 * Poison handling: what the worker does when a claim throws out of
 * `runClaim` (an unexpected error, not a model, tool or verifier failure,
 * which the host turns into events).
 *
 * Invariant: a turn whose claims throw `maxClaimFailures` times ends
 * `failed` with reason `claim_error`, and the tasks behind it proceed. The
 * count lives in the store (store/port.ts, invariant `turn-end-without-machine`), so it holds across
 * workers and restarts; below the bound the agent is offered again after a
 * backoff (1 s, 2 s, 4 s, … by default) instead of at the end of the lease.
 * The turn is ended by actors/host/turn-end.ts from the stored head, never by the
 * code path that threw.
 *
 * A store outage is not poison: a claim that threw because the store was
 * unreachable (a connection error, a timeout) counts nothing; its lease runs
 * out and the claim is retried, as after a crash. Errors of the memory store
 * and errors that repeat on every attempt (bad input to the store, a value
 * JSON cannot hold, a script error) do count.
 *
 * `claimRunner` (actors/pool/claim-runner.ts) runs claims with this handling.
 */
import type { ClaimResult, Store } from "../../store/port.ts";
import { isOutageError } from "../../store/outage.ts";
import type { HostDeps } from "../claim/context.ts";
import { turnEnd } from "../host/turn-end.ts";
import { DEFAULTS } from "../../common/defaults.ts";

type Claimed = Extract<ClaimResult, { status: "claimed" }>;

/** A store whose rejections are remembered in `marked`, so the worker can tell where an error came from. */
export function markStoreErrors(store: Store, marked: WeakSet<object>): Store {
  const mark = (e: unknown) => {
    if (e !== null && typeof e === "object") marked.add(e);
    return e;
  };
  return new Proxy(store, {
    get(target, p, receiver) {
      const v = Reflect.get(target, p, receiver);
      if (typeof v !== "function") return v;
      return (...args: unknown[]) => {
        let res: unknown;
        try {
          res = v.apply(target, args);
        } catch (e) {
          throw mark(e);
        }
        return res instanceof Promise ? res.catch((e) => Promise.reject(mark(e))) : res;
      };
    },
  });
}

/** True when `err` came from a store call and says the store could not be reached (not poison). */
export function isStoreOutage(err: unknown, store: Store, marked: WeakSet<object>): boolean {
  if (err === null || typeof err !== "object" || !marked.has(err)) return false;
  return isOutageError(err, store.kind);
}

export type ClaimFailureOutcome =
  | { status: "retry"; failures: number; retryAt: number }
  | { status: "turn_failed"; failures: number }
  | { status: "not_counted"; why: "store_outage" | "stale" | "agent_not_found" };

/** Counts the failure of `claim` in the store and ends its turn at the bound. */
export async function recordClaimFailure(
  deps: HostDeps,
  claim: Claimed,
  workerId: string,
  err: unknown,
  marked: WeakSet<object>,
): Promise<ClaimFailureOutcome> {
  const { store, clock } = deps;
  if (isStoreOutage(err, store, marked)) return { status: "not_counted", why: "store_outage" };
  const head = await store.getAgent(claim.agentId);
  if (!head) return { status: "not_counted", why: "agent_not_found" };
  if (head.epoch !== claim.epoch || head.leaseOwner !== workerId) return { status: "not_counted", why: "stale" };
  const message = `${(err as Error)?.name ?? "Error"}: ${(err as Error)?.message ?? String(err)}`;
  const now = clock.now();
  const r = await store.recordClaimFailure({
    agentId: claim.agentId,
    workerId,
    epoch: claim.epoch,
    expectedVersion: head.version,
    turnId: head.activeTurnId,
    error: message.slice(0, 500),
    maxFailures: deps.maxClaimFailures ?? DEFAULTS.maxClaimFailures,
    retryBaseMs: deps.claimRetryBackoffMs ?? DEFAULTS.claimRetryBackoffMs,
    end: turnEnd(head, "claim_error", message, now),
    now,
  });
  deps.cache.delete(claim.agentId);
  if (r.status === "retry") return r;
  if (r.status === "turn_failed") return { status: "turn_failed", failures: r.failures };
  return { status: "not_counted", why: r.status };
}
