/**
 * The actor host: runs one claim of one agent. Restore the snapshot, apply the
 * task and mail of the claim, then run the effect the state calls for (model
 * step, in-process tools, verification), feed its result back as an event and
 * commit with compare-and-set, until the agent needs nothing more from this
 * worker. The host keeps no business state between claims except the
 * snapshot cache, which is keyed by version and only saves reads.
 *
 * The parts of a claim, each with its own invariants:
 * - actors/claim-context.ts: the state the parts share (one object per claim).
 * - actors/lease-keeper.ts: lease renewal, the lease check, the tools' signal,
 *   mail that arrives while the claim runs.
 * - actors/commit-buffer.ts: the writes of the next commit and `flush`, the
 *   compare-and-set commit (a refused one stops the attempt).
 * - actors/apply-event.ts: a machine event and what it books into the commit.
 * - actors/model-step.ts, actors/tool-runner.ts, actors/verify-step.ts: the
 *   effects of `running`, `waiting-tools` and `verifying`.
 * This file holds the restore, the main loop, the spend-limit guard and the
 * delegation effects that follow a commit.
 *
 * Invariants:
 * - Every effect's result is committed before the next effect starts, except
 *   results of `retrySafe` tools, which ride with the commit of the model
 *   step that follows them; a lost compare-and-set stops this attempt: the
 *   abort signal fires, no further commit, dispatch or model call happens,
 *   the cache entry is dropped. What a crash at each point re-runs is in
 *   docs/architecture.md, "Commits and crash points":
 *   - before the first commit: the task start, the mail and the first effect;
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
 *   (actors/kept-results.ts); renewals and commits are retried through a
 *   store outage while the lease lasts (actors/store-retry.ts).
 * - Turn chaining: the commit that ends a turn and releases may claim the
 *   agent's next task in the same script call (store invariant 20); the
 *   caller runs it as the next claim, at most `maxChainedTurns` in a row,
 *   never with a spent drive budget.
 * - Mail is applied oldest first; a cancel applies only to the turn it was
 *   accepted for. Mail that arrives while a claim runs is applied by the next
 *   claim: this one hands the agent back at the next step boundary.
 * - Delegation (actors/delegation.ts): a call of an agent tool is recorded
 *   like an external call; the child's task is enqueued only after that
 *   commit applied, and again (idempotently) by every claim that releases
 *   the parent while it waits, which also pulls the results of children
 *   whose turns ended. A parent waiting on a child is released with
 *   `runnableAt = now + pollMs` for that. The commit that ends a delegated
 *   turn is followed by the push of its result to the parent.
 * - Spend limits (actors/spend.ts) are checked before each effect of a turn
 *   and right after each model step; crossing one ends the turn with
 *   `TURN_FAILED` (`budget_exhausted`), even a turn the step just finished.
 * - With a budget (actors/budget.ts), a claim whose budget is spent hands the
 *   agent back at the next step boundary: the commit that ends the step
 *   releases the lease with `runnableAt = now`, so any worker (or the next
 *   invocation) can go on at once; the hand-back is logged as `claim_yielded`.
 * - An agent this worker cannot run (definition unknown, snapshot not
 *   restorable) is parked: its lease is kept for a while instead of released.
 */
import { createActor, type InspectionEvent, type Observer } from "xstate";
import type { AnyAgent } from "../agents/define.ts";
import { resolveVerifyMaxAttempts } from "../agents/define.ts";
import { agentMachine } from "../machines/agent.ts";
import { checkSnapshot, initialPersisted, type PersistedSnapshot } from "../machines/persist.ts";
import type { AgentContext, TurnConfig } from "../machines/types.ts";
import type { Store } from "../store/port.ts";
import type { NewEvent } from "../common/events.ts";
import type { Message } from "../common/message.ts";
import { normalizeOutcome } from "../common/outcome.ts";
import { createToolRegistryView } from "./registry.ts";
import type { InboxTask } from "../store/types.ts";
import type { VerificationHooks } from "../verification/gate.ts";
import { UsedToolCallIds } from "./tool-call-ids.ts";
import { completionToolOf } from "./tool-specs.ts";
import type { Clock, Logger } from "./runtime.ts";
import type { SnapshotCache } from "./cache.ts";
import { DEFAULT_JSON_LIMITS, type JsonLimits } from "../common/json-bounds.ts";
import { deepFreeze } from "../common/freeze.ts";
import { type Budget, budgetSpent } from "./budget.ts";
import {
  agentToolOf, cancelChildren, childAgentId, childUsageOf, isLinkedChild, DEFAULT_DELEGATION_POLL_MS, DEFAULT_MAX_DELEGATION_DEPTH,
  type DelegatedCall, type DelegationDeps, type DelegationSettings, depthOf, pendingDelegations, pushChildResult, syncDelegations,
} from "./delegation.ts";
import { budgetMessage, crossedLimit, recordBudgetVerdict, turnSpendLimit } from "./spend.ts";
import type { Metrics } from "./metrics.ts";
import { endSpan, startSpan, type Span } from "./tracing.ts";
import type { ConversationMemory, MemoryPolicy } from "./memory.ts";
import type { RetentionLimits } from "../store/port.ts";
import { layerRetention } from "../store/retention.ts";
import { type AgentActor, type ClaimContext, type Claimed, IN_TURN, snap } from "./claim-context.ts";
import { type AfterCommitNotes, CommitBuffer } from "./commit-buffer.ts";
import { startLeaseKeeper } from "./lease-keeper.ts";
import type { KeptResults } from "./kept-results.ts";
import { applyEvent } from "./apply-event.ts";
import { modelStep } from "./model-step.ts";
import { runInProcessTools } from "./tool-runner.ts";
import { verifyStep } from "./verify-step.ts";

export { CHUNK_EVENT_CHARS, coalesceChunks, missingResultFields } from "./model-step.ts";

export interface HostDeps {
  store: Store;
  agents: ReadonlyMap<string, AnyAgent>;
  clock: Clock;
  logger: Logger;
  cache: SnapshotCache;
  leaseMs: number;
  /** XState inspection callback or observer (`createInspector(...).inspect` of @statelyai/inspect fits). */
  inspect?: ((event: InspectionEvent) => void) | Observer<InspectionEvent>;
  verification?: VerificationHooks;
  /** Default external tool deadline (ms). */
  externalToolTimeoutMs: number;
  /** Default in-process tool deadline (ms). */
  toolTimeoutMs: number;
  /** Base backoff after a verifier system error (ms), doubled per error. */
  verifierBackoffMs: number;
  /** Process metrics (step latency is observed here; the store wrapper counts the rest). */
  metrics?: Metrics;
  /**
   * Bounds of values that enter a turn from code (model tool-call arguments,
   * in-process tool results); default DEFAULT_JSON_LIMITS. A model response
   * over them is a retryable model error; a tool result over them becomes the
   * error outcome `invalid_result`.
   */
  jsonLimits?: JsonLimits;
  /** Claims of one turn that may throw before the turn fails with `claim_error` (default 5; actors/claim-failure.ts). */
  maxClaimFailures?: number;
  /** Backoff after a claim that threw, doubled per failure up to 32x (ms, default 1 000). */
  claimRetryBackoffMs?: number;
  /** Nesting bound and pull interval of delegations (actors/delegation.ts). */
  delegation?: DelegationSettings;
  /** Storage limits applied by the commit that ends a turn (store/retention.ts); null or absent: keep everything. An agent's own `retention` is laid over it. */
  retention?: RetentionLimits | null;
  /** The model's memory (actors/memory.ts) for agents without their own `memory`; absent: every retained message. */
  memory?: MemoryPolicy;
  /**
   * Measurement only: rebuild the used tool-call ids from the whole history at
   * every model step, as the host did before it kept them (bench/history-cost.ts
   * compares both in one run). The ids are the same either way.
   */
  rebuildToolCallIds?: boolean;
  /**
   * Turn chaining (store invariant 20): how many turns in a row one claim may
   * start through the commit that ends the previous one, before the agent is
   * handed back to the ready queue (behind the bells already due) so one busy
   * agent cannot hold a worker loop. Default DEFAULT_MAX_CHAINED_TURNS; 0 turns chaining off.
   */
  maxChainedTurns?: number;
  /**
   * Results of in-process tool calls this process ran and has not seen committed (actors/kept-results.ts):
   * a later claim in this process commits them instead of running the tool again. One per process; absent:
   * nothing is kept, and a claim that meets a recorded, unresolved call runs it.
   */
  keptResults?: KeptResults;
  /** The process's tool registry writer (actors/registry-writer.ts); absent: every successful call is written at once. */
  registryWriter?: import("./registry-writer.ts").RegistryWriter;
}

/** Default bound of turns one claim starts in a row (HostDeps.maxChainedTurns). */
export const DEFAULT_MAX_CHAINED_TURNS = 8;

/** The retention limits of one agent: its own laid over the process's (null: keep everything). */
export function retentionOf(deps: Pick<HostDeps, "retention">, agent: AnyAgent): RetentionLimits | null {
  if (!agent.retention) return deps.retention ?? null;
  return layerRetention(deps.retention ?? null, agent.retention);
}

/** The conversation a claim starts from: the cached one, none for a new agent, else the store's. */
async function loadConversation(
  store: Store,
  agentId: string,
  head: Claimed["head"],
  cached: { messages: Message[]; memory?: ConversationMemory } | undefined,
  fromSummary: boolean,
): Promise<{ history: Message[]; memory: ConversationMemory }> {
  if (cached) return { history: cached.messages, memory: cached.memory ?? { summary: null, firstIndex: head.messagesTrimmedThrough ?? 0 } };
  if (head.messageCount === 0) return { history: [], memory: { summary: null, firstIndex: 0 } };
  // With a memory policy only what the summary does not cover is ever shown: read from there.
  const conv = await store.readConversation(agentId, fromSummary ? { fromSummary } : undefined);
  if (!conv) return { history: [], memory: { summary: null, firstIndex: 0 } };
  return { history: conv.messages.map(deepFreeze), memory: { summary: conv.summary, firstIndex: conv.firstIndex } };
}

export type HostOutcome =
  /**
   * `yielded`: handed back with work left (mail arrived, or the budget was spent); the agent is due now.
   * `chained`: the last commit ended the turn and claimed the agent's next task (store invariant 20);
   * the caller runs it as the next claim (actors/claim-failure.ts `claimRunner`).
   */
  | { status: "released"; state: string; commits: number; yielded: boolean; chained?: Claimed; ended?: EndedTurnNote }
  | { status: "fenced"; reason: string; commits: number }
  | { status: "unrestorable"; message: string };

/** The turn a claim's commits ended (the pool logs `turn_end` from it): its id, final state and model steps. */
export type EndedTurnNote = { turnId: string; status: string; steps: number };

/** How long an agent whose snapshot cannot be restored is parked before the next attempt. */
const UNRESTORABLE_RETRY_MS = 5 * 60_000;

export function turnConfig(agent: AnyAgent, task: InboxTask): TurnConfig {
  return {
    maxSteps: agent.maxStepsPerTurn,
    completion: completionToolOf(agent),
    mustEndWith: agent.effectiveMustEndWith,
    verifyMaxAttempts: resolveVerifyMaxAttempts(agent, task.options.verifyMaxAttempts),
    maxVerifierErrors: agent.maxVerifierErrors ?? 3,
  };
}


/**
 * Processes one claim until the agent is released or the claim is lost. With
 * a `budget`, each step spends one of its steps, and the agent is handed back
 * when the budget is spent (shared by the claims of one drive). With
 * `mayChain`, the commit that ends the turn may claim the agent's next task
 * (answered as `chained`), unless the budget is spent.
 */
export async function runClaim(deps: HostDeps, claim: Claimed, workerId: string, budget?: Budget, mayChain = false): Promise<HostOutcome> {
  const { store, clock, logger, cache } = deps;
  const { agentId, epoch } = claim;
  const head = claim.head;
  const agent = deps.agents.get(head.agentName);
  const abort = new AbortController();
  const turnId = head.activeTurnId;
  const claimedAt = clock.now();
  const prev = claim.previousLease;
  if (prev) {
    // The agent was still leased to a worker that neither renewed nor released it: it died or stalled.
    logger.info("lease_takeover", {
      agentId, workerId, epoch, previousWorker: prev.workerId, previousLeaseUntil: prev.leaseUntil,
      waitedMs: Math.max(0, claimedAt - prev.leaseUntil), sinceLastWriteMs: Math.max(0, claimedAt - prev.updatedAt),
    });
  }
  logger.debug("claim", { agentId, workerId, epoch, state: head.state, mail: claim.mail.length, task: claim.task?.turnId ?? null });

  /**
   * Logs why this worker cannot run the agent and parks it: the lease is kept
   * for `backoffMs` instead of released. A release would be offered again at
   * once whenever mail is pending (the store rings for any agent with mail),
   * so every worker would spin on the same refusal; the held lease expires
   * into a retry instead. Mail and snapshot stay as they are.
   */
  const park = async (backoffMs: number, events: NewEvent[]) => {
    await store.commit({
      agentId, workerId, epoch, expectedVersion: head.version, turnId,
      snapshot: head.snapshot, state: head.state, activeTurnId: turnId,
      events, messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
      release: null, leaseMs: backoffMs, now: clock.now(),
    });
  };

  if (!agent) {
    // Not reached from the worker pool, which claims only agents it has definitions for (claimNext `agentNames`,
    // actors/pool/definition-sets.ts). A claim by another path parks the agent; a worker that has the definition takes
    // it when the lease runs out.
    logger.warn("agent definition not registered in this worker", { agentId, agent: head.agentName });
    await park(30_000, [{ type: "worker_missing_definition", data: { agent: head.agentName, workerId } }]);
    return { status: "unrestorable", message: `Agent definition "${head.agentName}" is not registered` };
  }

  const cached = cache.take(agentId, head.version, head.createdAt);
  let restored = cached?.actor as AgentActor | undefined;
  if (!restored) {
    let persisted: PersistedSnapshot;
    try {
      persisted = head.snapshot ? checkSnapshot(head.snapshot, { completion: completionToolOf(agent) }) : initialPersisted();
    } catch (err) {
      const message = (err as Error).message;
      logger.error("snapshot unrestorable", { agentId, message });
      // Retried after a while: a build that can migrate it may have been deployed by then.
      await park(UNRESTORABLE_RETRY_MS, [{ type: "snapshot_unrestorable", data: { message } }]);
      return { status: "unrestorable", message };
    }
    restored = createAgentActor(persisted, deps.inspect);
  }
  const actor = restored;
  // A cache miss costs a read, except for an agent that has no conversation yet (its first turn).
  const memoryPolicy = agent.memory ?? deps.memory;
  const { history, memory } = await loadConversation(store, agentId, head, cached, memoryPolicy !== undefined);
  // The tool-call ids of exactly `history` (actors/tool-call-ids.ts): every push and splice of it updates them too.
  const usedIds = cached?.toolCallIds ?? UsedToolCallIds.of(history);
  /** Set when the claim ends with its last commit applied: the actor then stays resident. */
  let resident = false;

  // Delegation of the turn this claim works on.
  const link = claim.task?.options?.delegation;
  const delegation = {
    link,
    depth: depthOf(link),
    maxDepth: deps.delegation?.maxDepth ?? DEFAULT_MAX_DELEGATION_DEPTH,
    pollMs: deps.delegation?.pollMs ?? DEFAULT_DELEGATION_POLL_MS,
  };
  const delegationDeps: DelegationDeps = { store, clock, logger, agents: deps.agents };

  // Keeps the lease alive through long model calls and tools, and notices mail that arrives meanwhile.
  const lease = startLeaseKeeper({
    store, clock, logger, agentId, workerId, epoch, leaseMs: deps.leaseMs, leaseUntil: head.leaseUntil, abort,
    claimedMail: claim.mail.length, commits: () => buffer.commits,
  });
  let ended: EndedTurnNote | undefined;
  const buffer: CommitBuffer = new CommitBuffer({
    ctx: { deps, agentId, workerId, epoch, abort, history, usedIds, memory, lease },
    actor, version: head.version, turnId, createdAt: head.createdAt, retention: retentionOf(deps, agent),
    stopAtCancel: link !== undefined,
    afterCommit: (released, notes) => {
      if (notes.endedTurn) ended = { turnId: notes.endedTurn.turnId, status: notes.endedTurn.status, steps: snap(ctx).context.step };
      return afterCommit(ctx, delegationDeps, released, notes);
    },
  });

  // One span per claim that works on a turn (a turn handed back or waiting for an external tool shows as several).
  const turnSpan: Span | undefined = turnId === null ? undefined : startSpan("gatehouse.turn", {
    "gatehouse.agent_id": agentId, "gatehouse.agent": head.agentName, "gatehouse.turn_id": turnId,
    "gatehouse.worker_id": workerId, "gatehouse.epoch": epoch,
  });
  const ids = { "gatehouse.agent_id": agentId, "gatehouse.turn_id": turnId ?? "" };

  const ctx: ClaimContext = {
    deps, claim, workerId, agentId, epoch, agent, actor, abort, history, usedIds, memory, memoryPolicy,
    limits: deps.jsonLimits ?? DEFAULT_JSON_LIMITS,
    registry: createToolRegistryView({ store, agent, clock, logger, agentId, writer: deps.registryWriter }),
    delegation,
    spendLimit: turnSpendLimit(agent, claim.task),
    spans: { turn: turnSpan, ids },
    commit: buffer,
    lease,
    transitionSeq: 0,
  };
  const apply = (ev: Parameters<typeof applyEvent>[1]) => applyEvent(ctx, ev);
  const emit = buffer.emit;
  const fenced = (): HostOutcome => ({ status: "fenced", reason: buffer.fenceReason || "lease_lost", commits: buffer.commits });
  // Turn chaining: within the caller's bound (`mayChain`) and the drive's budget.
  const chainAllowed = () => mayChain && !(budget && budgetSpent(budget, clock));
  const released = (yielded: boolean): HostOutcome => ({
    status: "released", state: snap(ctx).value, commits: buffer.commits, yielded, ...(buffer.chained ? { chained: buffer.chained } : {}),
    ...(ended ? { ended } : {}),
  });

  try {
    // 1. The task of this turn (new, or carried over from a worker that died before starting it).
    const ctx0 = snap(ctx).context;
    let startedHere = false;
    if (claim.task && ctx0.turnId !== claim.task.turnId && !IN_TURN.has(snap(ctx).value)) {
      startedHere = true;
      apply({
        type: "TASK_STARTED",
        at: clock.now(),
        turnId: claim.task.turnId,
        input: claim.task.input,
        config: turnConfig(agent, claim.task),
      });
    }
    // 2. Mail, oldest first (greedy batch).
    for (const m of claim.mail) {
      buffer.ackMailThrough = Math.max(buffer.ackMailThrough, m.seq);
      if (m.kind === "cancel") {
        // A cancel applies to the turn it was accepted for, never to another one. Mail written before
        // cancels named their turn was accepted while the turn active at this claim's start ran: it
        // belongs to that turn unless this claim started a new one.
        const { value, context } = snap(ctx);
        const aimedAt = m.turnId ?? (startedHere ? ctx0.turnId : context.turnId);
        if (aimedAt === context.turnId && IN_TURN.has(value)) apply({ type: "CANCEL", at: m.at, reason: m.reason });
        else {
          emit("mail_ignored", {
            seq: m.seq, kind: m.kind, state: value, turnId: aimedAt, activeTurnId: context.turnId,
            why: aimedAt === context.turnId ? "not_in_turn" : "turn_finished",
          });
        }
        continue;
      }
      const { value, context } = snap(ctx);
      if (value === "waiting-tools" && m.turnId === context.turnId && m.toolCallId in context.pending) {
        const callName = context.pending[m.toolCallId].name;
        const outcome = normalizeOutcome(m.outcome);
        const usage = await delegatedUsage(ctx, context, m.toolCallId);
        apply({
          type: "TOOL_RESULT", at: m.at, toolCallId: m.toolCallId, outcome, afterExecution: m.afterExecution,
          ...(usage ? { usage } : {}),
        });
        if (outcome.ok && m.source !== "watchdog") await ctx.registry.record(callName, emit);
      } else {
        emit("mail_ignored", { seq: m.seq, kind: m.kind, toolCallId: m.toolCallId, state: value });
      }
    }

    // 3. Effects until the agent needs nothing more from us.
    for (;;) {
      if (abort.signal.aborted) return fenced();
      if (await enforceSpendLimit(ctx, false)) continue;
      const need = needsMe(ctx);
      if (!need.yes) {
        if (!(await buffer.flush({ runnableAt: need.runnableAt }, { chain: chainAllowed() }))) {
          return { status: "fenced", reason: buffer.fenceReason, commits: buffer.commits };
        }
        resident = true;
        return released(false);
      }
      const { value, context } = snap(ctx);
      /** Set when this step's results may ride with the next commit (retry-safe tools; actors/tool-runner.ts). */
      let ride = false;
      if (value === "revising") {
        apply({ type: "FEEDBACK_APPENDED", at: clock.now() });
        continue;
      }
      if (value === "running") {
        if (context.step >= context.config.maxSteps) {
          apply({ type: "STEP_BUDGET_EXHAUSTED", at: clock.now() });
          continue;
        }
        await modelStep(ctx, context);
        await enforceSpendLimit(ctx, true);
      } else if (value === "waiting-tools") {
        ride = await runInProcessTools(ctx, context);
      } else if (value === "verifying") {
        await verifyStep(ctx, context);
      }
      if (abort.signal.aborted) return fenced();
      const next = needsMe(ctx);
      if (budget) budget.stepsLeft--;
      // Mail that arrived during this claim (a cancel, say) is applied by a fresh claim, which takes it
      // as one batch: hand the agent back at this step boundary rather than run the turn to its end.
      // A spent budget hands back the same way, in the commit that ends this step (no lease is left behind).
      const yielded = next.yes && (lease.mailWaiting || (budget !== undefined && budgetSpent(budget, clock)));
      const handBack = !next.yes ? { runnableAt: next.runnableAt } : yielded ? { runnableAt: clock.now() } : null;
      if (yielded && !lease.mailWaiting) {
        emit("claim_yielded", { reason: "budget", steps: budget!.limit.steps - budget!.stepsLeft, elapsedMs: clock.now() - budget!.startedAt });
      }
      // Results of retry-safe tools ride with the commit of the model step that follows them: a crash
      // before that commit runs the tools again under the same ids (tools/define.ts `retrySafe`).
      if (ride && handBack === null && snap(ctx).value === "running") continue;
      if (!(await buffer.flush(handBack, { chain: chainAllowed() }))) {
        return { status: "fenced", reason: buffer.fenceReason, commits: buffer.commits };
      }
      if (handBack) {
        resident = true;
        return released(yielded);
      }
    }
  } finally {
    lease.stop();
    if (turnSpan) {
      const { value, context } = snap(ctx);
      endSpan(turnSpan, {
        "gatehouse.state": value, "gatehouse.commits": buffer.commits,
        "gen_ai.usage.input_tokens": context.turnUsage.inputTokens, "gen_ai.usage.output_tokens": context.turnUsage.outputTokens,
      }, abort.signal.aborted ? buffer.fenceReason || "lease_lost" : undefined);
    }
    if (resident) cache.put(agentId, buffer.version, history, actor, { memory, createdAt: head.createdAt, toolCallIds: usedIds });
    else {
      actor.stop();
      cache.delete(agentId);
    }
  }
}

/** Does the current state need this worker to do something now? */
function needsMe(ctx: ClaimContext): { yes: true } | { yes: false; runnableAt: number | null } {
  const { clock } = ctx.deps;
  const { value, context } = snap(ctx);
  if (value === "running" || value === "revising") return { yes: true };
  if (value === "waiting-tools") {
    if (Object.values(context.pending).some((p) => !p.external)) return { yes: true };
    // Waiting on a child: come back now and then to re-dispatch and pull (actors/delegation.ts, 5.).
    return { yes: false, runnableAt: pendingDelegations(ctx.agent, context).length > 0 ? clock.now() + ctx.delegation.pollMs : null };
  }
  if (value === "verifying") {
    const at = context.verification.retryAt;
    return at !== null && at > clock.now() ? { yes: false, runnableAt: at } : { yes: true };
  }
  return { yes: false, runnableAt: null };
}

/** Effects on other agents that wait for a commit of this one (actors/delegation.ts). */
async function afterCommit(ctx: ClaimContext, delegationDeps: DelegationDeps, released: boolean, notes: AfterCommitNotes): Promise<void> {
  const { agentId, agent, claim } = ctx;
  const { link, depth } = ctx.delegation;
  const ended = notes.endedTurn;
  const cancels = notes.abandoned;
  const dispatchNow = notes.delegationsRecorded || released;
  const dispatchedFirst = notes.delegationsRecorded;
  if (ended && link && claim.task && ended.turnId === claim.task.turnId && await isLinkedChild(agentId, link)) {
    await pushChildResult(delegationDeps, agentId, link, ended);
  }
  if (cancels.length > 0) {
    for (const c of cancels) await cancelChildren(delegationDeps, agentId, c.turnId, [c], c.reason);
  }
  const { value, context } = snap(ctx);
  if (dispatchNow && value === "waiting-tools" && context.turnId) {
    const calls: DelegatedCall[] = pendingDelegations(agent, context).map(([toolCallId, tool, args]) => ({
      parentAgentId: agentId, parentAgentName: agent.name, parentTurnId: context.turnId!, toolCallId, tool, args, depth: depth + 1,
    }));
    // Calls recorded by this very commit are new: nothing to pull yet.
    if (calls.length > 0) await syncDelegations(delegationDeps, calls, !dispatchedFirst);
  }
}

/** What the child of a delegation call spent, read when its result is applied (actors/delegation.ts, 8.). */
async function delegatedUsage(ctx: ClaimContext, context: AgentContext, toolCallId: string) {
  const { agent, agentId } = ctx;
  const { store, logger } = ctx.deps;
  const p = context.pending[toolCallId];
  if (!p?.external || !agentToolOf(agent, p.name) || !context.turnId) return undefined;
  try {
    return childUsageOf(await store.getAgent(await childAgentId(agentId, context.turnId, toolCallId, p.name)));
  } catch (err) {
    logger.warn("child usage unreadable", { agentId, toolCallId, error: String(err) });
    return undefined;
  }
}

/**
 * Ends the turn with `budget_exhausted` when its usage crossed its spend limit (actors/spend.ts).
 * `afterStep`: right after a model step, which may already have finished the turn.
 */
async function enforceSpendLimit(ctx: ClaimContext, afterStep: boolean): Promise<boolean> {
  const { spendLimit, agent, agentId, commit: buffer } = ctx;
  const { clock, logger } = ctx.deps;
  if (!spendLimit) return false;
  const { value, context } = snap(ctx);
  const finishedByStep = afterStep && value === "done" && buffer.events.some((e) => e.type === "task" && e.data.turnId === context.turnId);
  if (!context.turnId || !(IN_TURN.has(value) || finishedByStep)) return false;
  const crossing = crossedLimit(spendLimit, context);
  if (!crossing) return false;
  let verdictId: string | null = null;
  const recorder = ctx.deps.verification?.verdicts;
  if (recorder) {
    try {
      verdictId = await recordBudgetVerdict(recorder, { agentId, agentName: agent.name, turnId: context.turnId }, crossing, spendLimit);
    } catch (err) {
      logger.warn("budget verdict not recorded", { agentId, turnId: context.turnId, error: String(err) });
    }
  }
  if (ctx.abort.signal.aborted) return true;
  buffer.emit("budget_exhausted", { turnId: context.turnId, ...crossing, budget: { ...spendLimit }, verdictId });
  // Calls the crossing step asked for are never recorded, so never dispatched (nor announced as delegations).
  buffer.recordToolCalls = [];
  buffer.delegationsRecorded = false;
  buffer.events = buffer.events.filter((e) => e.type !== "delegation_started");
  applyEvent(ctx, { type: "TURN_FAILED", at: clock.now(), turnId: context.turnId, reason: "budget_exhausted", message: budgetMessage(crossing) });
  return true;
}

function createAgentActor(persisted: PersistedSnapshot, inspect?: HostDeps["inspect"]): AgentActor {
  return createActor(agentMachine, { snapshot: persisted as never, ...(inspect ? { inspect } : {}) }).start();
}
