/**
 * `enqueueAndClaim` of the memory store (store/port.ts invariant `enqueue-then-claim`):
 * the enqueue and then the claim in one step (nothing runs between them), each
 * answered on its own, as the script store's pipeline answers them.
 */
import type { ClaimNextRequest, EnqueueAndClaimResult, EnqueueTaskRequest } from "../port.ts";
import { settle } from "../enqueue-claim.ts";
import type { MemoryState } from "./state.ts";
import * as turnProtocol from "./turn-protocol.ts";

export async function enqueueAndClaim(s: MemoryState, task: EnqueueTaskRequest, claim: ClaimNextRequest): Promise<EnqueueAndClaimResult> {
  // Both bodies run synchronously, one after the other, before either promise is awaited.
  const enqueued = settle(() => turnProtocol.enqueueTask(s, task));
  const claimed = settle(() => turnProtocol.claimNext(s, claim));
  return { enqueued: await enqueued, claim: await claimed };
}
