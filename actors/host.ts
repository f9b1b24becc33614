/**
 * The actor host: runs one claim of one agent. Restore the snapshot, apply the
 * task and mail of the claim, then run the effect the state calls for (model
 * step, in-process tools, verification), feed its result back as an event and
 * commit with compare-and-set, until the agent needs nothing more from this
 * worker. The host keeps no business state between claims except the
 * snapshot cache, which is keyed by version and only saves reads.
 *
 * Invariants:
 * - A tool call is recorded (committed) before it is dispatched.
 * - Only what the turn offered runs (actors/tool-specs.ts): a call of any
 *   other name, the completion tool the turn does not finish with included,
 *   is answered with the error outcome `tool_not_offered` and never reaches
 *   a tool. Finishing is the statechart's decision, from the turn's config.
 * - Every effect's result is committed before the next effect starts.
 * - A lost compare-and-set stops this attempt: the abort signal fires, no
 *   further commit, dispatch or model call happens, the cache entry is dropped.
 * - Transitions without an effect (task start, mail, feedback) ride along
 *   with the next commit; the event log still lists each of them.
 * - Mail that arrives while a claim runs is not lost in a long turn: the
 *   lease renewal notices it and the claim hands the agent back at the next
 *   step boundary, so the next claim applies it (a cancel takes effect).
 * - Every tool result passes the one contract check (contracts/check.ts) before
 *   the machine, the log or the model sees it: in-process results here,
 *   external ones in the delivery route. Its `contractValidation` is on the
 *   call's record and on the `tool_result` event. Preconditions of contracted
 *   tools run before `execute` (contracts/preconditions.ts).
 * - The tool registry hears of every successful call (actors/registry.ts);
 *   a registry failure is logged and never fails the turn.
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
 * - Nothing a model step does grows with the conversation except what the
 *   model is shown: the tool-call ids already used are kept next to the
 *   history (actors/tool-call-ids.ts: exactly the ids of the history's
 *   messages, changed only where the history changes), not rebuilt per step.
 * - With a budget (actors/budget.ts), a claim whose budget is spent hands the
 *   agent back at the next step boundary: the commit that ends the step
 *   releases the lease with `runnableAt = now`, so any worker (or the next
 *   invocation) can go on at once; the hand-back is logged as `claim_yielded`.
 */
import { createActor, type InspectionEvent, type Observer } from "xstate";
import type { AnyAgent } from "../agents/define.ts";
import { resolveVerifyMaxAttempts } from "../agents/define.ts";
import { ModelError, ToolError } from "../errors/errors.ts";
import { agentMachine, classifyStep, completionCall, submittedValue } from "../machines/agent.ts";
import { checkSnapshot, initialPersisted, type PersistedSnapshot, persistedOf } from "../machines/persist.ts";
import { type AgentContext, type AgentEvent, type ModelToolCall, SUBMIT_RESULT, type TurnConfig } from "../machines/types.ts";
import type { ModelResponse } from "../models/types.ts";
import type { ClaimResult, CommitRequest, Store } from "../store/port.ts";
import type { NewEvent } from "../common/events.ts";
import type { Message } from "../common/message.ts";
import { type AfterExecution, isMadeOutcome, normalizeOutcome, type Outcome } from "../common/outcome.ts";
import { type ContractValidation, notApplied } from "../common/contract-validation.ts";
import { checkOutcome } from "../contracts/check.ts";
import { checkPreconditions } from "../contracts/preconditions.ts";
import { createToolRegistryView } from "./registry.ts";
import type { InboxTask } from "../store/types.ts";
import type { AnyTool, ToolTermination } from "../tools/define.ts";
import { prepareArgs } from "../tools/specs.ts";
import { runVerification, type VerificationHooks } from "../verification/gate.ts";
import { assignToolCallIds, UsedToolCallIds } from "./tool-call-ids.ts";
import { agentToolSpecs, completionToolOf, offeredToolNames } from "./tool-specs.ts";
import { messagesFor } from "./transcript.ts";
import type { Clock, Logger } from "./runtime.ts";
import type { SnapshotCache } from "./cache.ts";
import { checkJsonValue, DEFAULT_JSON_LIMITS, describeViolation, type JsonLimits } from "../common/json-bounds.ts";
import { deepFreeze } from "../common/freeze.ts";
import { jsonClone } from "../common/json.ts";
import { abortableSleep } from "../common/sleep.ts";
import { type Budget, budgetSpent } from "./budget.ts";
import { inputRefMessage } from "../store/inputs.ts";
import { isAgentTool } from "../agents/agent-tool.ts";
import {
  agentToolOf, cancelChildren, childAgentId, childUsageOf, isLinkedChild, DEFAULT_DELEGATION_POLL_MS, DEFAULT_MAX_DELEGATION_DEPTH,
  type DelegatedCall, type DelegationSettings, depthOf, pendingDelegations, pushChildResult, syncDelegations,
} from "./delegation.ts";
import { budgetMessage, crossedLimit, recordBudgetVerdict, turnSpendLimit } from "./spend.ts";
import type { Metrics } from "./metrics.ts";
import { endSpan, startSpan, type Span } from "./tracing.ts";
import { type ConversationMemory, type MemoryPolicy, modelSummarizer, modelView, rollMemory } from "./memory.ts";
import type { ConversationSummary, RetentionLimits } from "../store/port.ts";
import { resolveRetention } from "../store/retention.ts";

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
}

/** The retention limits of one agent: its own laid over the process's (null: keep everything). */
export function retentionOf(deps: Pick<HostDeps, "retention">, agent: AnyAgent): RetentionLimits | null {
  if (!agent.retention) return deps.retention ?? null;
  return resolveRetention({ ...(deps.retention ?? {}), ...agent.retention });
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
  /** `yielded`: handed back with work left (mail arrived, or the budget was spent); the agent is due now. */
  | { status: "released"; state: string; commits: number; yielded: boolean }
  | { status: "fenced"; reason: string; commits: number }
  | { status: "unrestorable"; message: string };

type Claimed = Extract<ClaimResult, { status: "claimed" }>;
const FINAL = new Set(["done", "failed"]);
const IN_TURN = new Set(["running", "waiting-tools", "verifying", "revising"]);
/** In-process deadlines get this much slack so the tool's own timeout normally wins over the watchdog. */
const WATCHDOG_GRACE_MS = 5_000;
/** How long an agent whose snapshot cannot be restored is parked before the next attempt. */
const UNRESTORABLE_RETRY_MS = 5 * 60_000;

function isTermination(v: unknown): v is ToolTermination {
  return !!v && typeof v === "object" && (v as ToolTermination).__gatehouseTerminate === true;
}

function jsonValue(v: unknown): unknown {
  return v === undefined ? null : jsonClone(v);
}

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
 * when the budget is spent (shared by the claims of one drive).
 */
export async function runClaim(deps: HostDeps, claim: Claimed, workerId: string, budget?: Budget): Promise<HostOutcome> {
  const { store, clock, logger, cache } = deps;
  const limits = deps.jsonLimits ?? DEFAULT_JSON_LIMITS;
  const { agentId, epoch } = claim;
  const head = claim.head;
  const agent = deps.agents.get(head.agentName);
  const abort = new AbortController();
  let version = head.version;
  let commits = 0;
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
      agentId, workerId, epoch, expectedVersion: version, turnId,
      snapshot: head.snapshot, state: head.state, activeTurnId: turnId,
      events, messages: [], recordToolCalls: [], resolveToolCalls: [], ackMailThrough: 0,
      release: null, leaseMs: backoffMs, now: clock.now(),
    });
  };

  if (!agent) {
    // This worker does not know the definition; a worker that does can take the agent when the lease runs out.
    logger.warn("agent definition not registered in this worker", { agentId, agent: head.agentName });
    await park(30_000, [{ type: "worker_missing_definition", data: { agent: head.agentName, workerId } }]);
    return { status: "unrestorable", message: `Agent definition "${head.agentName}" is not registered` };
  }

  const cached = cache.take(agentId, version, head.createdAt);
  let restored = cached?.actor as ReturnType<typeof createAgentActor> | undefined;
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
  const retention = retentionOf(deps, agent);
  /** A summary computed for the next commit (actors/memory.ts: stored before anything depends on it). */
  let pendingSummary: ConversationSummary | null = null;
  /** Set when the claim ends with its last commit applied: the actor then stays resident. */
  let resident = false;

  // Delegation and spend limits of the turn this claim works on.
  const link = claim.task?.options?.delegation;
  const depth = depthOf(link);
  const maxDepth = deps.delegation?.maxDepth ?? DEFAULT_MAX_DELEGATION_DEPTH;
  const pollMs = deps.delegation?.pollMs ?? DEFAULT_DELEGATION_POLL_MS;
  const spendLimit = turnSpendLimit(agent, claim.task);
  const delegationDeps = { store, clock, logger, agents: deps.agents };
  /** Children of calls this claim stopped waiting for; cancelled after the next applied commit. */
  let abandoned: Array<{ turnId: string; toolCallId: string; toolName: string; reason: string }> = [];
  /** Delegations recorded by the buffered commit: dispatched once it applied. */
  let newDelegations = false;
  /** The turn that the buffered commit ends, pushed to the parent when the turn was delegated. */
  let endedTurn: { turnId: string; status: string; output: unknown; error: { reason: string; message: string } | null } | null = null;

  // Buffered writes of the next commit.
  let events: NewEvent[] = [];
  let newMessages: Message[] = [];
  let recordCalls: CommitRequest["recordToolCalls"] = [];
  let resolveCalls: CommitRequest["resolveToolCalls"] = [];
  let ackMail = 0;
  let transitionSeq = 0;
  const registry = createToolRegistryView({ store, agent, clock, logger, agentId });

  const snap = () => actor.getSnapshot() as unknown as { value: string; context: AgentContext };
  const emit = (type: string, data: Record<string, unknown>) => events.push({ type, data });

  function apply(ev: AgentEvent): boolean {
    const before = snap();
    actor.send(ev);
    const after = snap();
    if (before === after || (before.value === after.value && before.context === after.context)) {
      emit("event_ignored", { event: ev.type, state: before.value });
      return false;
    }
    // A turn's input is stored once, by the store (store/inputs.ts): the logged TASK_STARTED names it by
    // its turn id, and the turn's user message is stored as a reference to it.
    const logged = ev.type === "TASK_STARTED" ? { ...ev, input: undefined } : ev;
    emit("transition", { seq: ++transitionSeq, from: before.value, to: after.value, event: logged });
    const msgs = messagesFor(ev, before, after);
    for (const m of msgs) {
      deepFreeze(m);
      history.push(m);
      usedIds.add(m);
      newMessages.push(ev.type === "TASK_STARTED" && m.role === "user" ? inputRefMessage(ev.turnId) : m);
    }
    noteDelegationChanges(ev, before, after);
    const budgetEnd = ev.type === "TURN_FAILED" && ev.reason === "budget_exhausted";
    if (FINAL.has(after.value) && (!FINAL.has(before.value) || budgetEnd)) {
      if (budgetEnd && FINAL.has(before.value)) {
        // The step that crossed the limit had just finished the turn: its `task` event is replaced.
        const i = events.findIndex((e) => e.type === "task" && e.data.turnId === after.context.turnId);
        if (i >= 0) events.splice(i, 1);
      }
      endedTurn = { turnId: after.context.turnId!, status: after.value, output: after.context.output, error: after.context.error };
      emit("task", {
        turnId: after.context.turnId,
        status: after.value,
        deliverable: after.value === "done" ? after.context.output : null,
        error: after.context.error,
        usage: after.context.turnUsage,
      });
    }
    return true;
  }

  /** Does the current state need this worker to do something now? */
  function needsMe(): { yes: true } | { yes: false; runnableAt: number | null } {
    const { value, context } = snap();
    if (value === "running" || value === "revising") return { yes: true };
    if (value === "waiting-tools") {
      if (Object.values(context.pending).some((p) => !p.external)) return { yes: true };
      // Waiting on a child: come back now and then to re-dispatch and pull (actors/delegation.ts, 5.).
      return { yes: false, runnableAt: pendingDelegations(agent!, context).length > 0 ? clock.now() + pollMs : null };
    }
    if (value === "verifying") {
      const at = context.verification.retryAt;
      return at !== null && at > clock.now() ? { yes: false, runnableAt: at } : { yes: true };
    }
    return { yes: false, runnableAt: null };
  }

  async function flush(releaseAt: { runnableAt: number | null } | null): Promise<boolean> {
    const s = persistedOf(actor.getSnapshot());
    const final = FINAL.has(s.value) || s.value === "idle";
    const now = clock.now();
    const res = await store.commit({
      agentId, workerId, epoch, expectedVersion: version, turnId,
      snapshot: s, state: s.value,
      activeTurnId: final ? null : turnId,
      events, messages: newMessages, recordToolCalls: recordCalls, resolveToolCalls: resolveCalls,
      ackMailThrough: ackMail, release: releaseAt, leaseMs: deps.leaseMs, now,
      // The store trims only at a turn's end: the limits ride along with that commit only.
      ...(retention && final ? { retention } : {}),
      ...(pendingSummary ? { summary: pendingSummary } : {}),
    });
    if (res.status !== "applied") {
      // Another worker owns the agent now (or the watchdog answered first): stop every side effect.
      abort.abort();
      cache.delete(agentId);
      logger.info("commit_refused", { agentId, workerId, epoch, reason: res.reason });
      fenceReason = res.reason;
      return false;
    }
    commits++;
    version = res.version;
    pendingSummary = null;
    dropTrimmed(res.messagesTrimmedThrough);
    logger.debug("commit", { agentId, workerId, epoch, version, state: s.value, released: releaseAt !== null });
    if (!releaseAt) leaseUntil = now + deps.leaseMs;
    events = [];
    newMessages = [];
    recordCalls = [];
    resolveCalls = [];
    ackMail = 0;
    cache.put(agentId, version, history, undefined, { memory, createdAt: head.createdAt });
    await afterCommit(releaseAt !== null);
    return true;
  }

  /** Effects on other agents that wait for a commit of this one (actors/delegation.ts). */
  async function afterCommit(released: boolean): Promise<void> {
    const ended = endedTurn;
    const cancels = abandoned;
    const dispatchNow = newDelegations || released;
    const dispatchedFirst = newDelegations;
    endedTurn = null;
    abandoned = [];
    newDelegations = false;
    if (ended && link && claim.task && ended.turnId === claim.task.turnId && await isLinkedChild(agentId, link)) {
      await pushChildResult(delegationDeps, agentId, link, ended);
    }
    if (cancels.length > 0) {
      for (const c of cancels) await cancelChildren(delegationDeps, agentId, c.turnId, [c], c.reason);
    }
    const { value, context } = snap();
    if (dispatchNow && value === "waiting-tools" && context.turnId) {
      const calls: DelegatedCall[] = pendingDelegations(agent!, context).map(([toolCallId, tool, args]) => ({
        parentAgentId: agentId, parentAgentName: agent!.name, parentTurnId: context.turnId!, toolCallId, tool, args, depth: depth + 1,
      }));
      // Calls recorded by this very commit are new: nothing to pull yet.
      if (calls.length > 0) await syncDelegations(delegationDeps, calls, !dispatchedFirst);
    }
  }

  /** Notes children to cancel (calls no longer waited for) and links a delegated turn to its parent. */
  function noteDelegationChanges(ev: AgentEvent, before: { value: string; context: AgentContext }, after: { value: string; context: AgentContext }) {
    if (ev.type === "TASK_STARTED" && link && claim.task?.turnId === ev.turnId) {
      emit("delegated_by", { ...link, turnId: ev.turnId });
    }
    if (before.value !== "waiting-tools" || before.context.pending === after.context.pending) return;
    for (const [id, p] of Object.entries(before.context.pending)) {
      if (!p.external || id in after.context.pending || !agentToolOf(agent!, p.name)) continue;
      const answered = ev.type === "TOOL_RESULT" && ev.toolCallId === id;
      const timedOut = answered && !ev.outcome.ok && ev.outcome.error.type === "timeout";
      if (answered && !timedOut) continue;
      abandoned.push({
        turnId: before.context.turnId!, toolCallId: id, toolName: p.name,
        reason: timedOut ? "the parent's call timed out" : `the parent's turn ended (${after.context.error?.reason ?? after.value})`,
      });
    }
  }

  /**
   * Ends the turn with `budget_exhausted` when its usage crossed its spend limit (actors/spend.ts).
   * `afterStep`: right after a model step, which may already have finished the turn.
   */
  async function enforceSpendLimit(afterStep: boolean): Promise<boolean> {
    if (!spendLimit) return false;
    const { value, context } = snap();
    const finishedByStep = afterStep && value === "done" && events.some((e) => e.type === "task" && e.data.turnId === context.turnId);
    if (!context.turnId || !(IN_TURN.has(value) || finishedByStep)) return false;
    const crossing = crossedLimit(spendLimit, context);
    if (!crossing) return false;
    let verdictId: string | null = null;
    const recorder = deps.verification?.verdicts;
    if (recorder) {
      try {
        verdictId = await recordBudgetVerdict(recorder, { agentId, agentName: agent!.name, turnId: context.turnId }, crossing, spendLimit);
      } catch (err) {
        logger.warn("budget verdict not recorded", { agentId, turnId: context.turnId, error: String(err) });
      }
    }
    if (abort.signal.aborted) return true;
    emit("budget_exhausted", { turnId: context.turnId, ...crossing, budget: { ...spendLimit }, verdictId });
    // Calls the crossing step asked for are never recorded, so never dispatched (nor announced as delegations).
    recordCalls = [];
    newDelegations = false;
    events = events.filter((e) => e.type !== "delegation_started");
    apply({ type: "TURN_FAILED", at: clock.now(), turnId: context.turnId, reason: "budget_exhausted", message: budgetMessage(crossing) });
    return true;
  }

  /** Drops from the history what the store's retention dropped, so a resident agent sees what a fresh read would. */
  function dropTrimmed(trimmedThrough: number | undefined) {
    if (trimmedThrough === undefined || trimmedThrough <= memory.firstIndex) return;
    const dropped = history.splice(0, Math.min(history.length, trimmedThrough - memory.firstIndex));
    for (const m of dropped) usedIds.drop(m);
    memory.firstIndex = trimmedThrough;
  }

  /** Applies the memory policy before a model step (actors/memory.ts); the new summary rides with the next commit. */
  async function rollHistory(turnId: string, step: number) {
    if (!memoryPolicy) return;
    const how = memoryPolicy.summarize ?? "truncate";
    const summarizer = how === "truncate" ? null : how === "model" ? modelSummarizer(agent!.model, turnId, step) : how;
    const next = await rollMemory(history, memory, memoryPolicy, {
      agentId, signal: abort.signal, summarizer,
      onError: (err) => emit("summary_failed", { message: (err as Error)?.message ?? String(err) }),
    });
    if (!next) return;
    memory.summary = next;
    pendingSummary = next;
    emit("memory_rolled", { through: next.through, summaryChars: next.content.length });
  }
  let fenceReason = "";

  // Keep the lease alive through long model calls and tools, and notice mail that arrives meanwhile.
  let mailWaiting = false;
  const renewEvery = Math.max(50, Math.floor(deps.leaseMs / 3));
  // The lease as last confirmed by the store (claim, kept-lease commits, renewals).
  let leaseUntil = head.leaseUntil;
  /**
   * True once this attempt must stop: fenced, or the lease as last confirmed has run out (then it
   * aborts here, at once, without waiting for the renew tick or a store round trip).
   */
  function leaseLapsed(): boolean {
    if (!abort.signal.aborted && clock.now() >= leaseUntil) abort.abort();
    return abort.signal.aborted;
  }
  // The signal tools get. A process paused (SIGSTOP) or starved past its lease wakes with every
  // overdue timer firing in order of due time, so a tool timer set while the lease was still valid
  // (an `await sleep(0)`, a short poll) runs before the renew tick and before any timer bound to the
  // lease end: its tool would read `signal.aborted === false` and carry on with its side effect.
  // Reading `aborted` (or calling throwIfAborted) is therefore itself a lease check: the first tool
  // that looks after the wake-up fires the abort for every tool of the claim.
  // A signal of its own (the host's reads of abort.signal stay plain), fired with the attempt's abort.
  const toolAbort = new AbortController();
  abort.signal.addEventListener("abort", () => toolAbort.abort(), { once: true });
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
  const renewTimer = setInterval(async () => {
    if (abort.signal.aborted) return;
    // A process that was paused or starved (SIGSTOP, a long GC, a blocked event loop) wakes up with
    // its lease run out and maybe another worker owning the agent. Abort here, without the round
    // trip a renewal needs (the store would answer "lost"), so effects whose timers fall due after
    // this tick find the signal fired. A timer due earlier runs first; it meets the lease check in
    // `toolSignal` and in dispatch() instead, and its commit would be refused anyway.
    if (leaseLapsed()) return;
    try {
      const r = await store.renewLease({ agentId, workerId, epoch, leaseMs: deps.leaseMs, now: clock.now() });
      if (r.status === "lost") abort.abort();
      else leaseUntil = r.leaseUntil;
      if (r.status !== "lost" && !mailWaiting) {
        // Mail of our own batch counts until the first commit acknowledges it. A read that races
        // that commit can only cause one needless hand-back, never a missed one.
        const h = await store.getAgent(agentId);
        mailWaiting = (h?.pendingMail ?? 0) > (commits === 0 ? claim.mail.length : 0);
      }
    } catch (err) {
      logger.warn("lease renewal failed", { agentId, error: String(err) });
    }
  }, renewEvery);

  // One span per claim that works on a turn (a turn handed back or waiting for an external tool shows as several).
  const turnSpan: Span | undefined = turnId === null ? undefined : startSpan("gatehouse.turn", {
    "gatehouse.agent_id": agentId, "gatehouse.agent": head.agentName, "gatehouse.turn_id": turnId,
    "gatehouse.worker_id": workerId, "gatehouse.epoch": epoch,
  });
  const ids = { "gatehouse.agent_id": agentId, "gatehouse.turn_id": turnId ?? "" };

  try {
    // 1. The task of this turn (new, or carried over from a worker that died before starting it).
    const ctx0 = snap().context;
    let startedHere = false;
    if (claim.task && ctx0.turnId !== claim.task.turnId && !IN_TURN.has(snap().value)) {
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
      ackMail = Math.max(ackMail, m.seq);
      if (m.kind === "cancel") {
        // A cancel applies to the turn it was accepted for, never to another one. Mail written before
        // cancels named their turn was accepted while the turn active at this claim's start ran: it
        // belongs to that turn unless this claim started a new one.
        const { value, context } = snap();
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
      const { value, context } = snap();
      if (value === "waiting-tools" && m.turnId === context.turnId && m.toolCallId in context.pending) {
        const callName = context.pending[m.toolCallId].name;
        const outcome = normalizeOutcome(m.outcome);
        const usage = await delegatedUsage(context, m.toolCallId);
        apply({
          type: "TOOL_RESULT", at: m.at, toolCallId: m.toolCallId, outcome, afterExecution: m.afterExecution,
          ...(usage ? { usage } : {}),
        });
        if (outcome.ok && m.source !== "watchdog") await registry.record(callName, emit);
      } else {
        emit("mail_ignored", { seq: m.seq, kind: m.kind, toolCallId: m.toolCallId, state: value });
      }
    }

    // 3. Effects until the agent needs nothing more from us.
    for (;;) {
      if (abort.signal.aborted) return { status: "fenced", reason: fenceReason || "lease_lost", commits };
      if (await enforceSpendLimit(false)) continue;
      const need = needsMe();
      if (!need.yes) {
        if (!(await flush({ runnableAt: need.runnableAt }))) return { status: "fenced", reason: fenceReason, commits };
        resident = true;
        return { status: "released", state: snap().value, commits, yielded: false };
      }
      const { value, context } = snap();
      if (value === "revising") {
        apply({ type: "FEEDBACK_APPENDED", at: clock.now() });
        continue;
      }
      if (value === "running") {
        if (context.step >= context.config.maxSteps) {
          apply({ type: "STEP_BUDGET_EXHAUSTED", at: clock.now() });
          continue;
        }
        await modelStep(context);
        await enforceSpendLimit(true);
      } else if (value === "waiting-tools") {
        await runInProcessTools(context);
      } else if (value === "verifying") {
        const vSpan = startSpan("gatehouse.verification", ids, turnSpan);
        const vStarted = clock.now();
        const result = await runVerification({
          agent, agentId, turnId: context.turnId!, context, workerId, epoch,
          input: claim.task?.input ?? null,
          now: () => clock.now(), backoffMs: deps.verifierBackoffMs, signal: abort.signal,
          hooks: deps.verification,
        });
        for (const e of result.before) events.push(e);
        apply(result.event);
        const outcome = result.event.type === "VERIFY_PASSED" ? "passed" : result.event.type === "VERIFY_REJECTED" ? "rejected" : "error";
        logger.info("verification", {
          agentId, turnId: context.turnId, outcome, attempt: snap().context.verification.attemptsUsed,
          state: snap().value, durationMs: clock.now() - vStarted,
        });
        endSpan(vSpan, { "gatehouse.verification_outcome": outcome }, outcome === "error" ? "verifier error" : undefined);
      }
      if (abort.signal.aborted) return { status: "fenced", reason: fenceReason || "lease_lost", commits };
      const next = needsMe();
      if (budget) budget.stepsLeft--;
      // Mail that arrived during this claim (a cancel, say) is applied by a fresh claim, which takes it
      // as one batch: hand the agent back at this step boundary rather than run the turn to its end.
      // A spent budget hands back the same way, in the commit that ends this step (no lease is left behind).
      const yielded = next.yes && (mailWaiting || (budget !== undefined && budgetSpent(budget, clock)));
      const handBack = !next.yes ? { runnableAt: next.runnableAt } : yielded ? { runnableAt: clock.now() } : null;
      if (yielded && !mailWaiting) {
        emit("claim_yielded", { reason: "budget", steps: budget!.limit.steps - budget!.stepsLeft, elapsedMs: clock.now() - budget!.startedAt });
      }
      if (!(await flush(handBack))) {
        return { status: "fenced", reason: fenceReason, commits };
      }
      if (handBack) {
        resident = true;
        return { status: "released", state: snap().value, commits, yielded };
      }
    }
  } finally {
    clearInterval(renewTimer);
    if (turnSpan) {
      const { value, context } = snap();
      endSpan(turnSpan, {
        "gatehouse.state": value, "gatehouse.commits": commits,
        "gen_ai.usage.input_tokens": context.turnUsage.inputTokens, "gen_ai.usage.output_tokens": context.turnUsage.outputTokens,
      }, abort.signal.aborted ? fenceReason || "lease_lost" : undefined);
    }
    if (resident) cache.put(agentId, version, history, actor, { memory, createdAt: head.createdAt, toolCallIds: usedIds });
    else {
      actor.stop();
      cache.delete(agentId);
    }
  }

  /** The agent's instructions, and the `<known_tools>` block when the agent has tools and the registry knows any. */
  async function systemMessage(): Promise<string> {
    const block = await registry.knownTools();
    return block === "" ? agent!.instructions : `${agent!.instructions}\n\n${block}`;
  }

  async function modelStep(context: AgentContext): Promise<void> {
    const step = context.step + 1;
    const tId = context.turnId!;
    const tools = agentToolSpecs(agent!);
    const chunks: string[] = [];
    emit("step", { phase: "started", step });
    let res: ModelResponse | null = null;
    let lastError = "";
    const attempts = agent!.modelAttempts ?? 3;
    const span = startSpan("gatehouse.model_step", { ...ids, "gatehouse.step": step, "gen_ai.request.model": agent!.model.name }, turnSpan);
    const started = clock.now();
    await rollHistory(tId, step);
    const view = modelView(history, memory);
    for (let i = 0; i < attempts && !abort.signal.aborted; i++) {
      try {
        chunks.length = 0;
        res = await agent!.model.generate({
          agentId, turnId: tId, step,
          messages: [{ role: "system", content: await systemMessage() }, ...view],
          tools, signal: abort.signal, onChunk: (t) => chunks.push(t),
        });
        // Arguments enter the context, the log and the transcript: bounded before anything else sees them.
        for (const c of res.toolCalls ?? []) {
          const v = checkJsonValue(c.args, limits);
          if (v) {
            res = null;
            throw new ModelError(`Tool call "${String(c.name).slice(0, 64)}": ${describeViolation(v)}`, { retryable: true });
          }
        }
        break;
      } catch (err) {
        lastError = (err as Error)?.message ?? String(err);
        emit("model_error", { step, attempt: i + 1, message: lastError });
        if (err instanceof ModelError && !err.retryable) break;
        if (i + 1 < attempts) await abortableSleep(Math.min(2_000, 100 * 2 ** i), abort.signal);
      }
    }
    deps.metrics?.stepDuration((clock.now() - started) / 1000);
    if (abort.signal.aborted || !res) {
      endSpan(span, {}, abort.signal.aborted ? "aborted" : lastError || "model failed");
      if (!abort.signal.aborted) apply({ type: "MODEL_FAILED", at: clock.now(), message: lastError || "model failed" });
      return;
    }
    const now = clock.now();
    const raw = res.toolCalls ?? [];
    const callIds = assignToolCallIds(raw, deps.rebuildToolCallIds ? UsedToolCallIds.of(history) : usedIds, tId, step);
    const calls: ModelToolCall[] = raw.map((c, i) => {
      const id = callIds[i];
      const tool = agent!.offeredTools.find((t) => t.name === c.name);
      const args = c.args ?? {};
      // A delegation past the nesting bound runs as an in-process call that dispatch() answers with an error.
      if (tool?.external && !checkPreconditions(tool, args) && !(isAgentTool(tool) && depth + 1 > maxDepth)) {
        const prepared = prepareArgs(tool, args);
        if (prepared.ok) {
          return { id, name: c.name, args: jsonValue(prepared.args), external: true, deadline: now + (tool.timeoutMs ?? deps.externalToolTimeoutMs) };
        }
      }
      const timeout = (tool?.timeoutMs ?? deps.toolTimeoutMs) + WATCHDOG_GRACE_MS;
      return { id, name: String(c.name), args: jsonValue(args), external: false, deadline: now + timeout };
    });
    const usage = {
      inputTokens: Math.max(0, Math.trunc(res.usage?.inputTokens ?? 0)),
      outputTokens: Math.max(0, Math.trunc(res.usage?.outputTokens ?? 0)),
    };
    const cost = typeof res.cost === "number" && Number.isFinite(res.cost) ? res.cost : 0;
    const text = typeof res.text === "string" && res.text !== "" ? res.text : null;
    emit("step", { phase: "planning", step, text });
    for (const text of coalesceChunks(chunks)) emit("chunk", { step, text });
    const kind = classifyStep(calls, context.config);
    if (kind === "tools") {
      for (const c of calls) {
        const delegated = c.external && agentToolOf(agent!, c.name) !== undefined;
        recordCalls.push({
          turnId: tId, toolCallId: c.id, name: c.name, args: c.args, external: c.external, deadline: c.deadline,
          ...(delegated ? { delegated: true } : {}),
        });
        emit("tool_call", { step, toolCallId: c.id, name: c.name, args: c.args, external: c.external, deadline: c.deadline });
        const delegate = c.external ? agentToolOf(agent!, c.name) : undefined;
        if (delegate) {
          newDelegations = true;
          const childId = await childAgentId(agentId, tId, c.id, c.name);
          emit("delegation_started", { step, toolCallId: c.id, tool: c.name, childAgent: delegate.delegate.name, childAgentId: childId, depth: depth + 1 });
        }
      }
      emit("step", { phase: "executing", step, toolCallIds: calls.map((c) => c.id) });
    }
    const completion = completionCall(calls, context.config);
    if (completion) emit("tool_call", { step, toolCallId: completion.id, name: completion.name, args: completion.args, external: false, builtin: true });
    if (completion?.name === SUBMIT_RESULT && kind === "submit") {
      const missing = missingResultFields(claim.task?.input, submittedValue(completion.args));
      // Availability first (seed 003 §9): missing fields degrade with a warning, the turn still completes.
      if (missing.length > 0) emit("submit_result_degraded", { step, toolCallId: completion.id, missingFields: missing });
    }
    apply({ type: "MODEL_STEP", at: now, text, toolCalls: calls, usage, cost });
    endSpan(span, {
      "gen_ai.usage.input_tokens": usage.inputTokens, "gen_ai.usage.output_tokens": usage.outputTokens,
      "gatehouse.tool_calls": calls.length,
    });
    emit("step", {
      phase: "completed", step, model: agent!.model.name,
      llmUsage: usage, llmResponseCost: cost, toolCallIds: calls.map((c) => c.id),
    });
  }

  /** What the child of a delegation call spent, read when its result is applied (actors/delegation.ts, 8.). */
  async function delegatedUsage(context: AgentContext, toolCallId: string) {
    const p = context.pending[toolCallId];
    if (!p?.external || !agentToolOf(agent!, p.name) || !context.turnId) return undefined;
    try {
      return childUsageOf(await store.getAgent(await childAgentId(agentId, context.turnId, toolCallId, p.name)));
    } catch (err) {
      logger.warn("child usage unreadable", { agentId, toolCallId, error: String(err) });
      return undefined;
    }
  }

  async function runInProcessTools(context: AgentContext): Promise<void> {
    const tId = context.turnId!;
    const todo = Object.entries(context.pending).filter(([, p]) => !p.external);
    const results = await Promise.all(todo.map(async ([id, p]) => {
      const started = clock.now();
      const span = startSpan("gatehouse.tool_call", { ...ids, "gatehouse.tool_call_id": id, "gatehouse.tool": p.name }, turnSpan);
      const r = await dispatch(tId, id, p.name, p.args);
      endSpan(span, { "gatehouse.tool_ok": r.outcome.ok }, r.outcome.ok ? undefined : r.outcome.error.type);
      return { id, name: p.name, ...r, ms: clock.now() - started };
    }));
    if (abort.signal.aborted) return;
    for (const r of results) {
      emit("tool_result", {
        toolCallId: r.id, name: r.name, ok: r.outcome.ok, outcome: r.outcome, afterExecution: r.afterExecution, durationMs: r.ms,
        contractValidation: r.contractValidation,
      });
      if (snap().value !== "waiting-tools") continue; // an earlier result terminated the turn
      resolveCalls.push({ toolCallId: r.id, outcome: r.outcome, afterExecution: r.afterExecution, contractValidation: r.contractValidation });
      apply({ type: "TOOL_RESULT", at: clock.now(), toolCallId: r.id, outcome: r.outcome, afterExecution: r.afterExecution });
    }
    for (const r of results) if (r.outcome.ok) await registry.record(r.name, emit);
  }

  type Dispatched = { outcome: Outcome; afterExecution: AfterExecution; contractValidation: ContractValidation };

  /** Runs one in-process call and checks its result against the tool's contract. */
  async function dispatch(tId: string, toolCallId: string, name: string, args: unknown): Promise<Dispatched> {
    const tool: AnyTool | undefined = agent!.offeredTools.find((t) => t.name === name);
    const r = await execute(tool, tId, toolCallId, name, args);
    if (!tool) return { ...r, contractValidation: notApplied() };
    const checked = checkOutcome(tool, r.outcome);
    // A result refused by the contract goes back to the model; it never ends the turn.
    const afterExecution = checked.outcome.ok ? r.afterExecution : "continue";
    return { outcome: checked.outcome, afterExecution, contractValidation: checked.contractValidation };
  }

  async function execute(tool: AnyTool | undefined, tId: string, toolCallId: string, name: string, args: unknown): Promise<{ outcome: Outcome; afterExecution: AfterExecution }> {
    if (!tool) {
      // Not in the turn's specs: unknown, left out by allowedTools, or a completion tool this turn does not finish with.
      const offered = offeredToolNames(agent!).join(", ");
      return {
        outcome: { ok: false, error: { type: "tool_not_offered", message: `Tool "${name}" is not offered in this turn; the offered tools are: ${offered}`, retryable: false } },
        afterExecution: "continue",
      };
    }
    const refused = checkPreconditions(tool, args);
    if (refused) return { outcome: refused, afterExecution: "continue" };
    const prepared = prepareArgs(tool, args);
    if (!prepared.ok) {
      return { outcome: { ok: false, error: { type: "invalid_arguments", message: prepared.message, retryable: true, metadata: { issues: jsonValue(prepared.issues) as Record<string, unknown> } } }, afterExecution: "continue" };
    }
    if (isAgentTool(tool) && !tool.execute) {
      return {
        outcome: {
          ok: false,
          error: {
            type: "delegation_depth_exceeded",
            message: `Cannot delegate to agent "${tool.delegate.name}": delegations nest at most ${maxDepth} deep and this call would be depth ${depth + 1}`,
            retryable: false,
            metadata: { depth: depth + 1, maxDepth },
          },
        },
        afterExecution: "continue",
      };
    }
    if (!tool.execute) {
      return { outcome: { ok: false, error: { type: "invalid_arguments", message: `Tool "${name}" is external`, retryable: false } }, afterExecution: "continue" };
    }
    // No tool starts once the lease has run out: a process paused between two dispatches of one
    // step (Promise.all starts them one after the other) resumes here, past its lease.
    if (leaseLapsed()) {
      return { outcome: { ok: false, error: { type: "aborted", message: "the worker lost the agent before the tool started", retryable: true } }, afterExecution: "continue" };
    }
    const timeoutMs = tool.timeoutMs ?? deps.toolTimeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const value = await Promise.race([
        Promise.resolve(tool.execute(prepared.args, { agentId, turnId: tId, toolCallId, signal: toolSignal })),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new ToolError({ type: "timeout", message: `Tool "${name}" did not finish within ${timeoutMs} ms`, retryable: true })), timeoutMs);
        }),
      ]);
      const terminate = isTermination(value);
      let result = terminate ? value.value : value;
      // An outcome made by ok()/error() is the tool's outcome; any other value is an ok value.
      if (isMadeOutcome(result)) {
        const made = normalizeOutcome(result);
        if (!made.ok) {
          const meta = made.error.metadata !== undefined && !checkJsonValue(made.error.metadata, limits) ? { metadata: jsonValue(made.error.metadata) as Record<string, unknown> } : {};
          return {
            outcome: { ok: false, error: { type: String(made.error.type), message: String(made.error.message), retryable: made.error.retryable ?? false, ...meta } },
            afterExecution: "continue",
          };
        }
        result = made.value;
      }
      const over = checkJsonValue(result, limits);
      if (over) {
        return { outcome: { ok: false, error: { type: "invalid_result", message: `Tool "${name}" returned a value over the limits: ${describeViolation(over)}`, retryable: false } }, afterExecution: "continue" };
      }
      return { outcome: { ok: true, value: jsonValue(result) }, afterExecution: terminate ? "terminate" : "continue" };
    } catch (err) {
      if (err instanceof ToolError) {
        if (err.metadata && checkJsonValue(err.metadata, limits)) {
          return { outcome: { ok: false, error: { type: err.type, message: err.message, retryable: err.retryable } }, afterExecution: "continue" };
        }
        return { outcome: { ok: false, error: { type: err.type, message: err.message, retryable: err.retryable, ...(err.metadata ? { metadata: err.metadata } : {}) } }, afterExecution: "continue" };
      }
      return { outcome: { ok: false, error: { type: "tool_exception", message: (err as Error)?.message ?? String(err), retryable: false } }, afterExecution: "continue" };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Streamed text is logged in pieces of at least this many characters (the last may be shorter). */
export const CHUNK_EVENT_CHARS = 512;

/**
 * Chunks are committed with the step, so logging every token delta as its own
 * event would only multiply events (a streaming model sends one per token);
 * consecutive deltas are joined into pieces of CHUNK_EVENT_CHARS or more.
 */
export function coalesceChunks(chunks: string[]): string[] {
  const out: string[] = [];
  let cur = "";
  for (const c of chunks) {
    cur += c;
    if (cur.length >= CHUNK_EVENT_CHARS) {
      out.push(cur);
      cur = "";
    }
  }
  if (cur !== "") out.push(cur);
  return out;
}

/**
 * A task may declare the fields its result must carry: an object input with
 * `resultFields: string[]`. Returns the declared fields the submitted value
 * lacks (all of them when the value is not an object); a malformed
 * declaration is ignored.
 */
export function missingResultFields(input: unknown, value: unknown): string[] {
  if (!input || typeof input !== "object" || Array.isArray(input)) return [];
  const fields = (input as { resultFields?: unknown }).resultFields;
  if (!Array.isArray(fields) || !fields.every((f) => typeof f === "string")) return [];
  if (!value || typeof value !== "object" || Array.isArray(value)) return [...fields];
  return fields.filter((f) => !(f in (value as Record<string, unknown>)));
}

function createAgentActor(persisted: PersistedSnapshot, inspect?: HostDeps["inspect"]) {
  return createActor(agentMachine, { snapshot: persisted as never, ...(inspect ? { inspect } : {}) }).start();
}
