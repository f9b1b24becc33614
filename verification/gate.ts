/**
 * The verifier gate, host side: parse the candidate against the output
 * schema, hash it, call `output.verify`, and turn the result into one machine
 * event plus observability events. The attempt accounting itself lives in the
 * statechart (machines/agent.ts), so it is replay-safe by construction: an
 * attempt is counted by the commit that records it, and a rejection of the
 * candidate already counted (same hash, same `agent_output` call) is not
 * counted again.
 */
import { z } from "zod";
import type { AnyAgent } from "../agents/define.ts";
import { isReplayedRejection } from "../machines/agent.ts";
import type { AgentContext, AgentEvent } from "../machines/types.ts";
import type { Store } from "../store/port.ts";
import type { NewEvent } from "../store/types.ts";
import { candidateHash } from "./hash.ts";
import { VerificationRejected } from "./rejected.ts";

export interface AttemptInfo {
  agent: AnyAgent;
  agentId: string;
  turnId: string;
  toolCallId: string;
  attempt: number;
  maxAttempts: number;
  candidateHash: string;
  outcome:
    | { kind: "passed"; result: unknown }
    | { kind: "rejected"; code: string; message: string; retryable: boolean; metadata?: Record<string, unknown>; exhausted: boolean }
    | { kind: "system_error"; message: string };
  durationMs: number;
  now: number;
  store: Store;
}

/** Extension points of the gate (verdict records, extra guardians). */
export interface VerificationHooks {
  /** Runs after the output verifier; may turn a pass into a rejection (guardians). Returns events to log. */
  afterAttempt?(info: AttemptInfo): Promise<{ events: NewEvent[]; override?: AttemptInfo["outcome"] }>;
}

export interface GateArgs {
  agent: AnyAgent;
  agentId: string;
  turnId: string;
  context: AgentContext;
  input: unknown;
  workerId: string;
  epoch: number;
  now: () => number;
  backoffMs: number;
  signal: AbortSignal;
  hooks?: VerificationHooks;
  store: Store;
}

const toJson = (v: unknown) => (v === undefined ? null : JSON.parse(JSON.stringify(v)));

export async function runVerification(a: GateArgs): Promise<{ before: NewEvent[]; event: AgentEvent; after: NewEvent[] }> {
  const v = a.context.verification;
  const cand = v.candidate!;
  const schema = a.agent.output?.schema;
  const parsed = schema ? schema.safeParse(cand.args) : { success: true as const, data: cand.args };
  const value = parsed.success ? parsed.data : cand.args;
  const hash = await candidateHash(toJson(value));
  const maxAttempts = v.maxAttempts;
  const replay = v.lastCandidateHash === hash && v.lastCandidateCallId === cand.toolCallId && v.lastOutcome === "rejected";
  const attempt = replay ? v.attemptsUsed : v.attemptsUsed + 1;
  const base = { toolCallId: cand.toolCallId, attempt, maxAttempts, candidateHash: hash };
  const before: NewEvent[] = [{ type: "verification_started", data: { ...base } }];
  const started = a.now();

  let outcome: AttemptInfo["outcome"];
  if (!parsed.success) {
    outcome = {
      kind: "rejected", code: "schema_invalid", retryable: true, exhausted: false,
      message: z.prettifyError(parsed.error),
      metadata: { issues: toJson(parsed.error.issues) },
    };
  } else if (!a.agent.output?.verify) {
    outcome = { kind: "passed", result: toJson(value) };
  } else {
    try {
      const result = await a.agent.output.verify(value, {
        agent: { agentId: a.agentId, name: a.agent.name, turnId: a.turnId, input: a.input },
        execution: { workerId: a.workerId, epoch: a.epoch, toolCallId: cand.toolCallId, candidateHash: hash, signal: a.signal },
        attempt,
        maxAttempts,
      });
      outcome = { kind: "passed", result: toJson(result) };
    } catch (err) {
      if (err instanceof VerificationRejected) {
        outcome = {
          kind: "rejected", code: err.code, message: err.message, retryable: err.retryable, exhausted: false,
          ...(err.metadata !== undefined ? { metadata: toJson(err.metadata) } : {}),
        };
      } else {
        outcome = { kind: "system_error", message: (err as Error)?.message ?? String(err) };
      }
    }
  }
  if (outcome.kind === "rejected") {
    const used = replay ? v.attemptsUsed : v.attemptsUsed + 1;
    outcome.exhausted = outcome.retryable && used >= maxAttempts;
  }
  const after: NewEvent[] = [];
  if (a.hooks?.afterAttempt) {
    const r = await a.hooks.afterAttempt({
      agent: a.agent, agentId: a.agentId, turnId: a.turnId, toolCallId: cand.toolCallId, attempt, maxAttempts,
      candidateHash: hash, outcome, durationMs: a.now() - started, now: a.now(), store: a.store,
    });
    after.push(...r.events);
    if (r.override) outcome = r.override;
  }
  const at = a.now();
  switch (outcome.kind) {
    case "passed":
      after.unshift({ type: "verification_passed", data: { ...base } }, {
        type: "verification_attempt_counted", data: { ...base, attemptsUsed: attempt },
      });
      return { before, event: { type: "VERIFY_PASSED", at, hash, result: outcome.result }, after };
    case "rejected": {
      const counted = !replay;
      const rej: NewEvent[] = [{
        type: "verification_rejected",
        data: { ...base, code: outcome.code, message: outcome.message, retryable: outcome.retryable, replay },
      }];
      if (counted) rej.push({ type: "verification_attempt_counted", data: { ...base, attemptsUsed: attempt } });
      if (outcome.exhausted) rej.push({ type: "verification_exhausted", data: { ...base, attemptsUsed: attempt } });
      after.unshift(...rej);
      return {
        before,
        event: {
          type: "VERIFY_REJECTED", at, hash, code: outcome.code, message: outcome.message, retryable: outcome.retryable,
          ...(outcome.metadata !== undefined ? { metadata: outcome.metadata } : {}),
        },
        after,
      };
    }
    case "system_error": {
      const retryAt = at + a.backoffMs * 2 ** v.systemErrors;
      after.unshift({ type: "verification_error", data: { ...base, message: outcome.message, systemErrors: v.systemErrors + 1, retryAt } });
      return { before, event: { type: "VERIFY_ERROR", at, message: outcome.message, retryAt }, after };
    }
  }
}

export { isReplayedRejection };
