/**
 * `enqueueAndClaim` for every store (store/port.ts invariant `enqueue-then-claim`):
 * the store's own where it has one (one round trip on one Redis, one step on the
 * memory store), else `enqueueTask` and then `claimNext`, one after the other,
 * each answer settled on its own. Both ways the claim is made after the enqueue,
 * whatever the enqueue answered, and nothing throws.
 */
import type { ClaimNextRequest, EnqueueAndClaimResult, EnqueueTaskRequest, Settled, Store } from "./port.ts";

/** What `p` answered, or what it threw (a call that throws at once included). */
export async function settle<T>(p: () => Promise<T>): Promise<Settled<T>> {
  try {
    return { ok: true, value: await p() };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * The two calls one after the other: what a store without `enqueueAndClaim` does.
 *
 * @example
 * const r = await enqueueThenClaim(store, task, { workerTarget: "default", workerId: "w/0", leaseMs: 30_000, now });
 * if (r.claim.ok && r.claim.value.status === "claimed") run(r.claim.value);
 */
export async function enqueueThenClaim(store: Store, task: EnqueueTaskRequest, claim: ClaimNextRequest): Promise<EnqueueAndClaimResult> {
  const enqueued = await settle(() => store.enqueueTask(task));
  return { enqueued, claim: await settle(() => store.claimNext(claim)) };
}

/** The store's `enqueueAndClaim`, else the two calls one after the other; never throws, not even at once. */
export async function enqueueAndClaim(store: Store, task: EnqueueTaskRequest, claim: ClaimNextRequest): Promise<EnqueueAndClaimResult> {
  if (!store.enqueueAndClaim) return enqueueThenClaim(store, task, claim);
  // A wrapper that breaks the port's promise (it throws) leaves both outcomes unknown.
  const r = await settle(() => store.enqueueAndClaim!(task, claim));
  return r.ok ? r.value : { enqueued: { ok: false, error: r.error }, claim: { ok: false, error: r.error } };
}
