/**
 * The verifier contract: what an agent's `output.verify` and a guardian's
 * review are given and return. Shared by agent definitions, guardians and the
 * gate, so it sits below all three.
 */

/** How a verification attempt ended (kept in the statechart's context). */
export type VerificationOutcome = "passed" | "rejected" | "system_error";

/** What a verifier is told about the agent: its persisted state (a read-only copy). */
export interface VerifyAgentContext {
  agentId: string;
  /** Name of the agent definition. */
  name: string;
  turnId: string;
  /** The task input of the turn. */
  input: unknown;
  /** Model steps taken in this turn. */
  step: number;
  /** The gate's persisted state before this attempt. */
  verification: {
    attemptsUsed: number;
    lastCandidateHash: string | null;
    lastOutcome: VerificationOutcome | null;
    lastAttemptAt: number | null;
  };
}

/** What a verifier is told about this execution (per worker, not persisted). */
export interface VerifyExecutionContext {
  workerId: string;
  /** The fencing epoch of this claim. */
  epoch: number;
  /** The `agent_output` call that proposed the candidate. */
  toolCallId: string;
  candidateHash: string;
  /** Aborted when this worker loses the agent (fenced) or shuts down. */
  signal: AbortSignal;
}

export interface VerifyContext {
  agent: VerifyAgentContext;
  execution: VerifyExecutionContext;
  /** 1-based number of this attempt. */
  attempt: number;
  maxAttempts: number;
}

/**
 * Returns the final result (any JSON value; `undefined` keeps the parsed
 * candidate as the result) or throws `VerificationRejected`. Any other throw
 * is a system error. See common/verifier-shape.ts for the accepted shapes.
 */
export type Verifier<C = unknown> = (candidate: C, ctx: VerifyContext) => unknown | Promise<unknown>;
