/**
 * What the parts of one claim share (actors/host/run-claim.ts builds it once the
 * snapshot is restored; the effect runners, the event application and the
 * commit buffer take it instead of reaching into each other's variables).
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
 * - Everything a part wants written goes into `commit` (actors/claim/commit-buffer.ts);
 *   nothing is written to the store outside a commit except the lease renewals
 *   and the effects on other agents that follow an applied commit.
 */
import type { Actor } from "xstate";
import type { AnyAgent } from "../../agents/define.ts";
import type { Message } from "../../common/message.ts";
import type { JsonLimits } from "../../common/json-bounds.ts";
import type { SpendLimit } from "../../common/spend-limit.ts";
import type { agentMachine } from "../../machines/agent.ts";
import type { AgentContext } from "../../machines/types.ts";
import type { ClaimResult } from "../../store/port.ts";
import type { DelegationLink } from "../../store/types.ts";
import type { CommitBuffer } from "./commit-buffer.ts";
import type { HostDeps } from "../host/run-claim.ts";
import type { LeaseKeeper } from "./lease-keeper.ts";
import type { ConversationMemory, MemoryPolicy } from "../conversation/memory.ts";
import type { ToolRegistryView } from "../registry/claim-view.ts";
import type { UsedToolCallIds } from "../conversation/tool-call-ids.ts";
import type { Span } from "../observe/tracing.ts";

export type Claimed = Extract<ClaimResult, { status: "claimed" }>;
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
  readonly agent: AnyAgent;
  readonly actor: AgentActor;
  /** The attempt's abort (see the invariants above). */
  readonly abort: AbortController;
  /** The conversation as the model may be shown it (retained messages, oldest first). */
  readonly history: Message[];
  /** The tool-call ids of exactly `history`. */
  readonly usedIds: UsedToolCallIds;
  readonly memory: ConversationMemory;
  /** The agent's memory policy, else the process's (actors/conversation/memory.ts); absent: every retained message. */
  readonly memoryPolicy: MemoryPolicy | undefined;
  /** Bounds of values that enter the turn from code. */
  readonly limits: JsonLimits;
  readonly registry: ToolRegistryView;
  /** The delegation this claim's task came from, its depth, and the nesting bound and pull interval. */
  readonly delegation: { link: DelegationLink | undefined; depth: number; maxDepth: number; pollMs: number };
  /** The spend limit of the claim's turn (actors/spend/spend-limit.ts). */
  readonly spendLimit: SpendLimit | null;
  /** The claim's turn span (absent when the claim works on no turn) and the attributes every span carries. */
  readonly spans: { turn: Span | undefined; ids: Record<string, string> };
  /** The writes of the next commit. */
  readonly commit: CommitBuffer;
  readonly lease: LeaseKeeper;
  /** Number of the last `transition` event this claim logged. */
  transitionSeq: number;
}

/** The actor's current state and context. */
export function snap(ctx: Pick<ClaimContext, "actor">): { value: string; context: AgentContext } {
  return ctx.actor.getSnapshot() as unknown as { value: string; context: AgentContext };
}
