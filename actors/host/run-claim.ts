/**
 * The actor host: runs one claim of one agent. Restore the snapshot, apply the
 * task and mail of the claim, then run the effect the state calls for (model
 * step, in-process tools, verification), feed its result back as an event and
 * commit with compare-and-set, until the agent needs nothing more from this
 * worker. The host keeps no business state between claims except the
 * snapshot cache, which is keyed by version and only saves reads.
 *
 * This is where a wakeup enters the engine: the worker pool (actors/pool/pool.ts)
 * calls `runClaim` with what `store.claimNext` returned. The stations of a
 * claim, each with its own invariants, in the order they run:
 * 1. actors/host/restore.ts: the actor and conversation, from the snapshot
 *    cache or the store (`restoreClaim`); an agent this worker cannot run is
 *    parked.
 * 2. actors/claim/context.ts: the state the parts share (one object per
 *    claim), `HostDeps`, and the `CommitSink` the parts write to;
 *    actors/claim/lease-keeper.ts keeps the lease and notices new mail.
 * 3. actors/host/inbox.ts: the task and the mail, as machine events.
 * 4. actors/host/effects.ts: the effect loop; the turn is decided by the
 *    steps in actors/steps/ (model step, in-process tools, verification),
 *    which return what happened; actors/host/apply.ts applies it.
 * 5. actors/claim/commit-buffer.ts: where it is written: the compare-and-set
 *    commit (a refused one stops the attempt).
 * 6. back in restore.ts: the actor stays resident or is dropped (`leaveClaim`).
 * Beside the claim, called at named points: the spend guard
 * (actors/spend/guard.ts, before each effect and after each model step), the
 * delegation hooks (actors/delegation/claim-hooks.ts: at the start, when a
 * delegated result is applied, after each applied commit) and the turn span
 * (actors/observe/tracing.ts, at the start and the end).
 *
 * Invariants:
 * - Steps decide, the host applies and writes: a step (and the spend guard)
 *   takes what it reads and returns what happened (actors/steps/happened.ts);
 *   actors/host/apply.ts is the one caller of `applyEvent` and, with
 *   actors/claim/commit-buffer.ts, the only module that builds a commit.
 *   No step imports the store (tests/repo/layers.test.ts pins all three).
 * - Every effect's result is committed before the next effect starts, except
 *   results of `retrySafe` tools, which ride with the commit of the model
 *   step that follows them; a lost compare-and-set stops this attempt: the
 *   abort signal fires, no further commit, dispatch or model call happens,
 *   the cache entry is dropped. What a crash at each point re-runs is in
 *   docs/architecture.md, "Commits and crash points":
 *   - before the first commit: the task start, the mail and the first
 *     effect (the claim stored only the turn's state, `running`:
 *     store/port.ts invariant `turn-start`);
 *   - in a model step: the step (its calls were never dispatched);
 *   - between recording calls and their results' commit: the tools, under
 *     the recorded ids (`toolCallId` is the tools' idempotency key);
 *   - after retry-safe tools returned, before the next model step's commit:
 *     those tools (same ids) and the model step;
 *   - after a commit that chained the next task: that task's start, by the
 *     claim that takes over the lease.
 *   A claim that loses the agent while its process lives re-runs less: the
 *   process keeps its tools' results until committed, and its next claim of
 *   the agent commits them instead of running the tools again
 *   (actors/claim/kept-results.ts); renewals and commits are retried through a
 *   store outage while the lease lasts (actors/claim/store-retry.ts).
 * - Turn chaining: the commit that ends a turn and releases may claim the
 *   agent's next task in the same script call (store invariant `turn-chaining`); the
 *   caller runs it as the next claim, at most `maxChainedTurns` in a row,
 *   never with a spent drive budget.
 * - Mail is applied oldest first; a cancel applies only to the turn it was
 *   accepted for. Mail that arrives while a claim runs is applied by the next
 *   claim: this one hands the agent back at the next step boundary.
 * - Delegation (actors/delegation/delegation.ts): a call of an agent tool is recorded
 *   like an external call; the child's task is enqueued only after that
 *   commit applied, and again (idempotently) by every claim that releases
 *   the parent while it waits, which also pulls the results of children
 *   whose turns ended. A parent waiting on a child is released with
 *   `runnableAt = now + pollMs` for that. The commit that ends a delegated
 *   turn is followed by the push of its result to the parent.
 * - Spend limits (actors/spend/spend-limit.ts; the guard, actors/spend/guard.ts) are checked before each effect of a turn
 *   and right after each model step; crossing one ends the turn with
 *   `TURN_FAILED` (`budget_exhausted`), even a turn the step just finished.
 * - With a drive budget (actors/claim/drive-budget.ts), a claim whose drive budget is spent hands the
 *   agent back at the next step boundary: the commit that ends the step
 *   releases the lease with `runnableAt = now`, so any worker (or the next
 *   invocation) can go on at once; the hand-back is logged as `claim_yielded`.
 * - An agent this worker cannot run (definition unknown, snapshot not
 *   restorable) is parked: its lease is kept for a while instead of released.
 */
import { CommitBuffer } from "../claim/commit-buffer.ts";
import { type ClaimContext, type Claimed, type EndedTurnNote, type HostDeps, type HostOutcome, retentionOf, snap } from "../claim/context.ts";
import type { RunningDriveBudget } from "../claim/drive-budget.ts";
import { startLeaseKeeper } from "../claim/lease-keeper.ts";
import { afterCommit, claimDelegation } from "../delegation/claim-hooks.ts";
import { claimSpanIds, endTurnSpan, startTurnSpan } from "../observe/tracing.ts";
import { createToolRegistryView } from "../registry/claim-view.ts";
import { turnSpendLimit } from "../spend/spend-limit.ts";
import { runEffects } from "./effects.ts";
import { applyInbox } from "./inbox.ts";
import { applyUpgrade } from "./apply.ts";
import { leaveClaim, logClaim, restoreClaim } from "./restore.ts";

/**
 * Processes one claim until the agent is released or the claim is lost. With
 * a `driveBudget`, each step spends one of its steps, and the agent is handed
 * back when it is spent (shared by the claims of one drive). With
 * `mayChain`, the commit that ends the turn may claim the agent's next task
 * (answered as `chained`), unless the drive budget is spent.
 */
export async function runClaim(deps: HostDeps, claim: Claimed, workerId: string, driveBudget?: RunningDriveBudget, mayChain = false): Promise<HostOutcome> {
  const { store, clock, logger } = deps;
  const { agentId, epoch, head } = claim;
  logClaim(deps, claim, workerId, clock.now());
  const restored = await restoreClaim(deps, claim, workerId);
  if ("status" in restored) return restored;
  const { binding, agent, actor, history, memory, usedIds } = restored;
  const abort = new AbortController();
  const turnId = head.activeTurnId;
  const delegation = claimDelegation(deps, claim);
  // Keeps the lease alive through long model calls and tools, and notices mail that arrives meanwhile.
  const lease = startLeaseKeeper({
    store, clock, logger, agentId, workerId, epoch, leaseMs: deps.leaseMs, leaseUntil: head.leaseUntil, abort,
    claimedMail: claim.mail.length, commits: () => buffer.commits,
  });
  let ended: EndedTurnNote | undefined;
  const buffer: CommitBuffer = new CommitBuffer({
    ctx: { deps, agentId, workerId, epoch, abort, history, usedIds, memory, lease },
    actor, version: head.version, turnId, retention: retentionOf(deps, binding),
    stopAtCancel: delegation.link !== undefined,
    afterCommit: (released, notes) => {
      if (notes.endedTurn) ended = { turnId: notes.endedTurn.turnId, status: notes.endedTurn.status, steps: snap(ctx).context.step };
      return afterCommit(ctx, released, notes);
    },
  });
  const turnSpan = startTurnSpan({ agentId, agentName: head.agentName, turnId, workerId, epoch });
  const ctx: ClaimContext = {
    deps, claim, workerId, agentId, epoch, binding, agent, actor, abort, history, usedIds, memory,
    registry: createToolRegistryView({ store, agent, clock, logger, agentId, writer: deps.registryWriter }),
    delegation,
    spendLimit: turnSpendLimit(binding, claim.task),
    spans: { turn: turnSpan, ids: claimSpanIds(agentId, turnId) },
    commit: buffer,
    lease,
    transitionSeq: 0,
    approved: new Map(),
  };
  /** Set when the claim ends with its last commit applied: the actor then stays resident. */
  let resident = false;
  if (restored.upgradeFrom !== undefined) applyUpgrade(ctx, restored.upgradeFrom);
  try {
    await applyInbox(ctx);
    const end = await runEffects(ctx, buffer, driveBudget, mayChain);
    resident = end.resident;
    return ended && end.outcome.status === "released" ? { ...end.outcome, ended } : end.outcome;
  } finally {
    lease.stop();
    const { value, context } = snap(ctx);
    endTurnSpan(turnSpan, {
      state: value, commits: buffer.commits, inputTokens: context.turnUsage.inputTokens, outputTokens: context.turnUsage.outputTokens,
    }, abort.signal.aborted ? buffer.fenceReason || "lease_lost" : undefined);
    leaveClaim(deps, claim, restored, { resident, version: buffer.version });
  }
}
