/** Types of the verifier gate. */

/** What a verifier is told about the agent (persisted state, read-only). */
export interface VerifyAgentContext {
  agentId: string;
  name: string;
  turnId: string;
  /** The task input of the turn. */
  input: unknown;
}

/** What a verifier is told about this execution (per worker, not persisted). */
export interface VerifyExecutionContext {
  workerId: string;
  epoch: number;
  toolCallId: string;
  candidateHash: string;
  signal: AbortSignal;
}

export interface VerifyContext {
  agent: VerifyAgentContext;
  execution: VerifyExecutionContext;
  /** 1-based number of this attempt. */
  attempt: number;
  maxAttempts: number;
}

/** Returns the final result (any JSON value) or throws `VerificationRejected`. */
export type Verifier<C = unknown> = (candidate: C, ctx: VerifyContext) => unknown | Promise<unknown>;
