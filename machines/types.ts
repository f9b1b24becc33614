/**
 * Context and events of the agent statechart. All of it is plain JSON: the
 * persisted snapshot is `JSON.stringify`-able and restores to the same state.
 */
import type { AfterExecution, Outcome } from "../common/outcome.ts";
import type { VerificationOutcome } from "../common/verifier.ts";

/**
 * Bumped when the persisted context changes shape; the upgrades live in
 * machines/persist.ts (`MIGRATIONS`). 2: `config.completion` and
 * `verification.candidate.from`.
 */
export const SNAPSHOT_SCHEMA_VERSION = 2;

export const STATES = ["idle", "running", "waiting-tools", "verifying", "revising", "done", "failed"] as const;
export type AgentState = typeof STATES[number];

/** The built-in tool a turn finishes with: `agent_output` for an agent that declares `output`, else `submit_result`. */
export type CompletionTool = typeof AGENT_OUTPUT | typeof SUBMIT_RESULT;

/** Per-turn settings, fixed when the turn starts (the machine is one definition for all agents). */
export interface TurnConfig {
  maxSteps: number;
  /**
   * The completion tool this turn offers. Only a call of it finishes the
   * turn; with `agent_output`, nothing but a verified candidate does (no
   * text, no `submit_result`, no bare `terminate`).
   */
  completion: CompletionTool;
  /** Tool names one of which must end the turn; empty: plain text may end it. */
  mustEndWith: string[];
  verifyMaxAttempts: number;
  maxVerifierErrors: number;
}

export interface PendingCall {
  name: string;
  args: unknown;
  external: boolean;
  /** While an approval is pending: the approval's deadline (the store moves it when a person approves). */
  deadline: number;
  /**
   * The call needs a person's approval before it runs (tools/define.ts `needsApproval`). The
   * decision lives in the store's record of the call (store/port.ts invariant `first-decision-wins`);
   * the machine only keeps the call pending, in `waiting-tools`, until its result comes.
   */
  approval?: true;
  /**
   * The name of the event the call waits for (tools/define.ts `waitFor`): an external call that
   * `POST /v1/events` with that name resolves (store/port.ts invariant `named-event-waits`).
   */
  event?: string;
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cost: number;
  steps: number;
}

export type CandidateSource = "agent_output" | "terminate";

export interface VerificationState {
  maxAttempts: number;
  attemptsUsed: number;
  lastCandidateHash: string | null;
  /** The `agent_output` call that produced the last verified candidate (tells a replay from a resubmission). */
  lastCandidateCallId: string | null;
  lastOutcome: VerificationOutcome | null;
  lastAttemptAt: number | null;
  /** Verifier system errors of the current candidate (not counted as attempts). */
  systemErrors: number;
  /** When the verifier may run again after a system error. */
  retryAt: number | null;
  /**
   * The candidate waiting in `verifying`: the arguments of an `agent_output`
   * call, or the value of a tool result that asked to terminate the turn
   * (`from: "terminate"`; its call already has its tool message).
   */
  candidate: { toolCallId: string; args: unknown; from: CandidateSource } | null;
  lastRejection: { code: string; message: string; retryable: boolean; metadata?: Record<string, unknown> } | null;
}

export interface AgentContext {
  schemaVersion: number;
  turnId: string | null;
  turns: number;
  /** Model steps taken in the current turn. */
  step: number;
  config: TurnConfig;
  /** Outstanding tool calls of the current step, by id. */
  pending: Record<string, PendingCall>;
  output: unknown;
  error: { reason: string; message: string } | null;
  verification: VerificationState;
  usage: Usage;
  turnUsage: Usage;
  /**
   * The definition the current (or last) turn runs under when a handoff
   * switched it (agents/handoff.ts); absent: the agent's own definition (the
   * name it is bound to). Set by a TOOL_RESULT carrying `handoff`, cleared
   * when a turn starts: a handoff lasts for its turn.
   */
  definition?: string;
}

/** What a handoff's tool result switches: the definition and the turn config under it (the turn's step budget kept). */
export interface HandoffSwitch {
  /** The definition that made the call. */
  from: string;
  /** The definition the turn continues under. */
  to: string;
  config: TurnConfig;
  /**
   * The turn stays gated by its binding's output contract (the binding declares `output`;
   * actors/steps/handoff.ts): the verification state goes on instead of starting a fresh count.
   */
  keepsGate?: true;
}

export interface ModelToolCall {
  id: string;
  name: string;
  args: unknown;
  external: boolean;
  deadline: number;
  /** The call waits for a person's approval (PendingCall `approval`). */
  approval?: true;
  /** The call waits for a named event (PendingCall `event`). */
  event?: string;
}

export type AgentEvent =
  /** `version`: the definition version the turn runs under (store/port.ts invariant `turn-versions`); absent before versions were recorded. */
  | { type: "TASK_STARTED"; at: number; turnId: string; input: unknown; config: TurnConfig; version?: string }
  | {
    type: "MODEL_STEP";
    at: number;
    text: string | null;
    toolCalls: ModelToolCall[];
    usage: { inputTokens: number; outputTokens: number };
    cost: number;
  }
  | { type: "MODEL_FAILED"; at: number; message: string }
  | { type: "STEP_BUDGET_EXHAUSTED"; at: number }
  /**
   * `usage`: what a delegated child agent spent for this call (actors/delegation/delegation.ts); added to the
   * turn's and the agent's usage (tokens and cost, not steps), so a child's spend counts toward its
   * parent's spend limits. `handoff`: the call handed the turn to another definition.
   */
  | {
    type: "TOOL_RESULT";
    at: number;
    toolCallId: string;
    outcome: Outcome;
    afterExecution: AfterExecution;
    usage?: ChildUsage;
    /** The result of a handoff call (actors/steps/handoff.ts): the turn continues under `handoff.to`. */
    handoff?: HandoffSwitch;
    /**
     * The call ran with arguments a person edited when approving it (POST …/approvals `args`): the
     * model's tool message says so and shows them (actors/conversation/transcript.ts).
     */
    editedArgs?: Record<string, unknown>;
  }
  | { type: "VERIFY_PASSED"; at: number; hash: string; result: unknown }
  | {
    type: "VERIFY_REJECTED";
    at: number;
    hash: string;
    code: string;
    message: string;
    retryable: boolean;
    metadata?: Record<string, unknown>;
  }
  | { type: "VERIFY_ERROR"; at: number; message: string; retryAt: number }
  | { type: "FEEDBACK_APPENDED"; at: number }
  | { type: "CANCEL"; at: number; reason: string }
  /**
   * The turn ended from outside the machine (actors/host/turn-end.ts): its claims
   * kept throwing (`claim_error`), an operator reset it (`reset`), or it
   * crossed a spend limit (`budget_exhausted`, actors/spend/spend-limit.ts).
   * Accepted in every state; the turn may never have started in the machine.
   */
  | { type: "TURN_FAILED"; at: number; turnId: string; reason: TurnFailedReason; message: string };

/** Why a turn was ended from outside the machine. */
export type TurnFailedReason = "claim_error" | "reset" | "budget_exhausted";

/** Tokens and cost a delegated child spent (carried by TOOL_RESULT). */
export interface ChildUsage {
  inputTokens: number;
  outputTokens: number;
  cost: number;
}

export type AgentEventType = AgentEvent["type"];

/** Built-in tool names. */
export const AGENT_OUTPUT = "agent_output";
export const SUBMIT_RESULT = "submit_result";
