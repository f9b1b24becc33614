/**
 * `enqueueAndClaim` of the script store (store/port.ts invariant `enqueue-then-claim`).
 *
 * On one Redis over TCP (`deps.pipeline`): the enqueue's EVALSHA and the
 * claim's in one pipeline, written at once, so the pair costs one round trip
 * and Redis, which fsyncs once per event-loop iteration before it replies,
 * writes both to the AOF with one fsync when both arrive in one read. Redis
 * runs a connection's commands in order, so the claim runs after the enqueue.
 * The scripts and their arguments are those of `enqueueTask` and `claimNext`
 * themselves (`ScriptContext.pipelined` holds back what they send), so both
 * keep every rule of their own.
 *
 * NOSCRIPT (after a restart or SCRIPT FLUSH) answers a script that did not
 * run; it is sent again after the pipeline (store/script-runner.ts
 * `pipelineRunner`). When that was the enqueue while the claim ran, the claim
 * ran before the enqueue: a claim that took nothing then says nothing about
 * the task, so it is made once more, after.
 *
 * The sharded layout (its claimNext reads several shards, and a pipeline
 * holds one slot) and Upstash (its client interface has no pipeline) send
 * the two calls one after the other.
 */
import type { ClaimNextRequest, ClaimResult, EnqueueAndClaimResult, EnqueueTaskRequest, EnqueueTaskResult, Settled } from "../port.ts";
import { settle } from "../enqueue-claim.ts";
import type { ScriptContext } from "./context.ts";
import * as turnProtocol from "./turn-protocol.ts";

export async function enqueueAndClaim(c: ScriptContext, task: EnqueueTaskRequest, claim: ClaimNextRequest): Promise<EnqueueAndClaimResult> {
  if (!c.deps.pipeline || c.sharded) {
    const enqueued = await settle(() => turnProtocol.enqueueTask(c, task));
    return { enqueued, claim: await settle(() => turnProtocol.claimNext(c, claim)) };
  }
  // Settled at once (settle calls each synchronously, so both reach the pipeline): no rejection goes unhandled.
  let sent: [Promise<Settled<EnqueueTaskResult>>, Promise<Settled<ClaimResult>>] | undefined;
  let late: boolean[];
  try {
    ({ late } = await c.pipelined(() => void (sent = [settle(() => turnProtocol.enqueueTask(c, task)), settle(() => turnProtocol.claimNext(c, claim))])));
  } catch (error) {
    // The eviction check failed: nothing was sent.
    return { enqueued: { ok: false, error }, claim: { ok: false, error } };
  }
  const enqueued = await sent![0];
  let claimed = await sent![1];
  const tookNothing = claimed.ok && claimed.value.status !== "claimed" && claimed.value.status !== "schedule_due";
  if (late.length === 2 && late[0] && !late[1] && tookNothing) claimed = await settle(() => turnProtocol.claimNext(c, claim));
  return { enqueued, claim: claimed };
}
