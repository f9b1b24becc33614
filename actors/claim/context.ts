/**
 * What the parts of one claim share, and what the host is given to run claims
 * (`HostDeps`). actors/host/run-claim.ts builds the context once the snapshot
 * is restored; the host's parts (inbox, effects, apply), the delegation
 * hooks and the commit buffer take it instead of reaching into each other's
 * variables. A step (actors/steps/) and the spend guard take a narrow `Pick`
 * of it, what they read, and never its `commit` or `actor`. This file is a leaf of the engine: it imports types only (and
 * the retention rules), never the host, a step or the commit buffer, so every
 * part can depend on it without an import cycle.
 *
 * Invariants:
 * - One claim, one context: it lives from the restore to the end of the claim
 *   and is never shared with another claim. Only the actor and the history may
 *   outlive it, through the snapshot cache (actors/conversation/cache.ts).
 * - `history` and `usedIds` change together: every push onto or splice of the
 *   history adds or drops the same messages' ids (actors/conversation/tool-call-ids.ts).
 * - `memory.firstIndex` is the index in the stored conversation of
 *   `history[0]`; `memory.summary` covers what lies before it.
 * - `abort` fires once, when this attempt must stop (a refused commit, a lost
 *   or run-out lease); after it no commit, dispatch or model call starts.
 * - Everything a part wants written goes into `commit`, a `CommitSink`
 *   (implemented by actors/claim/commit-buffer.ts): only actors/host/apply.ts
 *   calls its methods, for what the steps returned, and never touches the
 *   buffered writes themselves. Nothing is written to the
 *   store outside a commit except the lease renewals and the effects on other
 *   agents that follow an applied commit.
 */
import type { Actor, InspectionEvent, Observer } from "xstate";
import type { AnyAgent } from "../../agents/define.ts";
import type { NewEvent } from "../../common/events.ts";
import type { JsonLimits } from "../../common/json-bounds.ts";
import type { Message } from "../../common/message.ts";
import type { SpendLimit } from "../../common/spend-limit.ts";
import type { agentMachine } from "../../machines/agent.ts";
import type { AgentContext } from "../../machines/types.ts";
import type { ClaimResult, CommitRequest, ConcurrencyLimits, ConversationSummary, LiveSets, RetentionLimits, Store } from "../../store/port.ts";
import { layerRetention } from "../../store/retention.ts";
import type { LiveChannel } from "../../store/live.ts";
import type { DelegationLink } from "../../store/types.ts";
import type { VerificationHooks } from "../../verification/gate.ts";
import type { SnapshotCache } from "../conversation/cache.ts";
import type { ConversationMemory, MemoryPolicy } from "../conversation/memory.ts";
import type { UsedToolCallIds } from "../conversation/tool-call-ids.ts";
import type { Metrics } from "../observe/metrics.ts";
import type { Span } from "../observe/tracing.ts";
import type { ToolRegistryView } from "../registry/claim-view.ts";
import type { RegistryWriter } from "../registry/writer.ts";
import type { Clock, Logger } from "../runtime.ts";
import type { KeptResults } from "./kept-results.ts";
import type { LeaseKeeper } from "./lease-keeper.ts";

/** Nesting bound and pull interval of delegations (actors/delegation/delegation.ts checks them). */
export interface DelegationSettings {
  /** Deepest allowed nesting (1: children only, no grandchildren); default 3. */
  maxDepth?: number;
  /** How often a parent waiting on a child is claimed again to re-dispatch and pull results (ms, default 30 000). */
  pollMs?: number;
}

export interface HostDeps {
  store: Store;
  /**
   * Where model deltas and "log grew" notices go (store/live.ts; default: none
   * sent). The gatehouse passes the store's channel, or an in-process one.
   */
  live?: LiveChannel;
  agents: ReadonlyMap<string, AnyAgent>;
  /** Per name, every version registered, current first (actors/host/versions.ts); absent: `agents` only. */
  versions?: ReadonlyMap<string, readonly AnyAgent[]>;
  /** The other definition sets the pool last heard of (actors/pool/definition-sets.ts). */
  liveSets?: LiveSets;
  clock: Clock;
  logger: Logger;
  cache: SnapshotCache;
  leaseMs: number;
  /**
   * Concurrency limits by key (store/port.ts invariant `concurrency-keys`): every claim and chaining
   * commit of this process keeps them. Filled from `createGatehouse({ concurrencyLimits })`; absent: none.
   */
  concurrencyLimits?: ConcurrencyLimits | undefined;
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
  /** Claims of one turn that may throw before the turn fails with `claim_error` (default 5; actors/pool/claim-failure.ts). */
  maxClaimFailures?: number;
  /** Backoff after a claim that threw, doubled per failure up to 32x (ms, default 1 000). */
  claimRetryBackoffMs?: number;
  /** Nesting bound and pull interval of delegations (actors/delegation/delegation.ts). */
  delegation?: DelegationSettings;
  /** Storage limits applied by the commit that ends a turn (store/retention.ts); null or absent: keep everything. An agent's own `retention` is laid over it. */
  retention?: RetentionLimits | null;
  /** The model's memory (actors/conversation/memory.ts) for agents without their own `memory`; absent: every retained message. */
  memory?: MemoryPolicy;
  /**
   * Measurement only: rebuild the used tool-call ids from the whole history at
   * every model step, as the host did before it kept them (bench/history-cost.ts
   * compares both in one run). The ids are the same either way.
   */
  rebuildToolCallIds?: boolean;
  /**
   * Turn chaining (store invariant `turn-chaining`): how many turns in a row one claim may
   * start through the commit that ends the previous one, before the agent is
   * handed back to the ready queue (behind the bells already due) so one busy
   * agent cannot hold a worker loop. Default DEFAULT_MAX_CHAINED_TURNS; 0 turns chaining off.
   */
  maxChainedTurns?: number;
  /**
   * Results of in-process tool calls this process ran and has not seen committed (actors/claim/kept-results.ts):
   * a later claim in this process commits them instead of running the tool again. One per process; absent:
   * nothing is kept, and a claim that meets a recorded, unresolved call runs it.
   */
  keptResults?: KeptResults;
  /** The process's tool registry writer (actors/registry/writer.ts); absent: every successful call is written at once. */
  registryWriter?: RegistryWriter;
}

/** Default bound of turns one claim starts in a row (HostDeps.maxChainedTurns). */
export const DEFAULT_MAX_CHAINED_TURNS = 8;

/** The retention limits of one agent: its own laid over the process's (null: keep everything). */
export function retentionOf(deps: Pick<HostDeps, "retention">, agent: AnyAgent): RetentionLimits | null {
  if (!agent.retention) return deps.retention ?? null;
  return layerRetention(deps.retention ?? null, agent.retention);
}

export type Claimed = Extract<ClaimResult, { status: "claimed" }>;

export type HostOutcome =
  /**
   * `yielded`: handed back with work left (mail arrived, or the budget was spent); the agent is due now.
   * `chained`: the last commit ended the turn and claimed the agent's next task (store invariant `turn-chaining`);
   * the caller runs it as the next claim (actors/pool/claim-runner.ts `claimRunner`).
   */
  | { status: "released"; state: string; commits: number; yielded: boolean; chained?: Claimed; ended?: EndedTurnNote }
  | { status: "fenced"; reason: string; commits: number }
  | { status: "unrestorable"; message: string };

/** The turn a claim's commits ended (the pool logs `turn_end` from it): its id, final state and model steps. */
export type EndedTurnNote = { turnId: string; status: string; steps: number };


export type AgentActor = Actor<typeof agentMachine>;

/** States in which no turn runs any more. */
export const FINAL: ReadonlySet<string> = new Set(["done", "failed"]);
/** States of a running turn. */
export const IN_TURN: ReadonlySet<string> = new Set(["running", "waiting-tools", "verifying", "revising"]);

export interface ClaimContext {
  readonly deps: HostDeps;
  readonly claim: Claimed;
  readonly workerId: string;
  readonly agentId: string;
  readonly epoch: number;
  /** The definition the agent is bound to (its tasks' name): new turns start under it; spend, retention and memory are its. */
  readonly binding: AnyAgent;
  /**
   * The definition the turn runs under: the binding, or a handoff's target (actors/host/apply.ts
   * `followDefinition` switches it, with `registry`, after each applied event).
   */
  agent: AnyAgent;
  readonly actor: AgentActor;
  /** The attempt's abort (see the invariants above). */
  readonly abort: AbortController;
  /** The conversation as the model may be shown it (retained messages, oldest first). */
  readonly history: Message[];
  /** The tool-call ids of exactly `history`. */
  readonly usedIds: UsedToolCallIds;
  readonly memory: ConversationMemory;
  registry: ToolRegistryView;
  /** The delegation this claim's task came from, its depth, and the nesting bound and pull interval. */
  readonly delegation: { link: DelegationLink | undefined; depth: number; maxDepth: number; pollMs: number };
  /** The spend limit of the claim's turn (actors/spend/spend-limit.ts). */
  readonly spendLimit: SpendLimit | null;
  /** The claim's turn span (absent when the claim works on no turn) and the attributes every span carries. */
  readonly spans: { turn: Span | undefined; ids: Record<string, string> };
  /** The writes of the next commit. */
  readonly commit: CommitSink;
  readonly lease: LeaseKeeper;
  /** Number of the last `transition` event this claim logged. */
  transitionSeq: number;
  /**
   * Pending calls of the turn a person approved, with their deadline from the approval on and the
   * arguments a person edited, if any (actors/steps/approvals.ts): from this claim's `approval` mail
   * and the store's records.
   */
  readonly approved: Map<string, ApprovedCall>;
}

/** A call a person approved: its deadline from the approval on, and the edited arguments it runs with (if any). */
export interface ApprovedCall {
  deadline: number;
  args?: Record<string, unknown>;
}

/** A tool call as the commit records it (before it is dispatched). */
export type RecordedCall = CommitRequest["recordToolCalls"][number];
/** A recorded call's result as the commit resolves it. */
export type ResolvedCall = CommitRequest["resolveToolCalls"][number];
export type { ConversationSummary };

/** The actor's current state and context. */
export function snap(ctx: Pick<ClaimContext, "actor">): { value: string; context: AgentContext } {
  return ctx.actor.getSnapshot() as unknown as { value: string; context: AgentContext };
}

/** A turn the buffered commit ends; pushed to the parent when the turn was delegated. */
export interface EndedTurn {
  turnId: string;
  status: string;
  output: unknown;
  error: { reason: string; message: string } | null;
}

/** A child of a call this claim stopped waiting for; cancelled after the next applied commit. */
export interface AbandonedChild {
  turnId: string;
  toolCallId: string;
  toolName: string;
  reason: string;
}

/** What the applied commit causes on other agents (actors/delegation/claim-hooks.ts). */
export interface AfterCommitNotes {
  endedTurn: EndedTurn | null;
  abandoned: AbandonedChild[];
  /** The commit recorded calls of agent tools: dispatch them now. */
  delegationsRecorded: boolean;
}

/**
 * Where what happened in a claim is booked for the next commit (by
 * actors/host/apply.ts alone). Each method books one kind of write; only the commit buffer (actors/claim/commit-buffer.ts)
 * reads the booked writes back, when it flushes them.
 */
export interface CommitSink {
  /** Adds an event to the next commit. */
  readonly emit: (type: string, data: Record<string, unknown>) => void;
  /** Adds events built elsewhere (the verifier gate's), in order. */
  append(events: readonly NewEvent[]): void;
  /** Adds a message to the stored conversation. */
  addMessage(message: Message): void;
  /** Records a tool call (before it is dispatched); `delegated`: a call of an agent tool, dispatched once the commit applied. */
  recordCall(call: RecordedCall, delegated: boolean): void;
  /** Resolves a recorded call with its result. */
  resolveCall(result: ResolvedCall): void;
  /** Acknowledges the mail up to `seq` (the highest applied so far counts). */
  ackMail(seq: number): void;
  /** A summary computed for the next commit (actors/conversation/memory.ts). */
  setSummary(summary: ConversationSummary): void;
  /** Pins turn `turnId` to definition `version` with the next commit (store/port.ts invariant `turn-versions`). */
  pin(turnId: string, version: string): void;
  /** Notes the turn the commit ends (and, for a delegated turn, pushes to the parent after it). */
  endTurn(ended: EndedTurn): void;
  /** True when the buffered writes already end turn `turnId` (hold its `task` event). */
  endsTurn(turnId: string): boolean;
  /** Drops the buffered `task` event of turn `turnId` (a later end of the same turn replaces it). */
  withdrawTurnEnd(turnId: string): void;
  /** Notes a child to cancel once the commit applied. */
  abandon(child: AbandonedChild): void;
  /**
   * Drops the calls this commit would record, with their delegation notes and their `delegation_started` and
   * `approval_requested` events: a turn that crossed its spend limit never dispatches what its last step asked for.
   */
  withdrawToolCalls(): void;
}
