/**
 * The verifier gate, host side: run in `verifying`, it judges the candidate
 * of one `agent_output` call and answers with one machine event
 * (VERIFY_PASSED / VERIFY_REJECTED / VERIFY_ERROR) plus the observability
 * events that go into the same commit, before the transition.
 *
 * One attempt:
 * 1. Parse the candidate with the output schema. A candidate that fails it
 *    is a rejection `schema_invalid` (the zod issues are the feedback),
 *    counted like any other.
 * 2. Hash the parsed candidate (verification/hash.ts).
 * 3. The output verifier (`output.verify`, guardian
 *    `output_verifier:<agent>`) judges it: a return value passes (it becomes
 *    the turn's output; `undefined` keeps the candidate), `VerificationRejected`
 *    rejects, any other throw is a system error.
 * 4. If it passed, every guardian assigned to the agent reviews it, in
 *    order. All must PASS; NEEDS_CHANGES is a retryable rejection, FAIL a
 *    final one, a throw a system error.
 * 5. Each judgment is written as a verdict (verification/recorder.ts):
 *    PASS; NEEDS_CHANGES for a retryable rejection with attempts left; FAIL
 *    for a final rejection or one that uses the last attempt. A system error
 *    writes nothing (it judges no candidate) unless it is the one that fails
 *    the turn (`verifier_error`): that one writes FAIL with a `verifier_error`
 *    flag.
 *
 * Invariants:
 * - The committed outcome of an attempt is the outcome its verdicts record.
 *   Before a review runs, its verdict is looked up; if one exists (a worker
 *   judged this attempt and died before its commit), it is adopted and the
 *   review does not run again. A write that answers `exists` (a racing
 *   worker) adopts the stored verdict likewise.
 * - Attempt accounting stays in the statechart (machines/agent.ts): an
 *   attempt is counted by the commit that records it, and a rejection of the
 *   candidate already counted (same hash, same call) is not counted again.
 * - The gate never throws: whatever goes wrong in it becomes a system error
 *   (retried with backoff in the store, not counted).
 * - Agents with neither `verify` nor guardians have no gate: a candidate
 *   that matches the schema completes the turn with no verification events
 *   and no verdicts; one that does not is rejected (`schema_invalid`).
 */
import { z } from "zod";
import type { AnyAgent } from "../agents/define.ts";
import { attemptNumber, isLastVerifierError, isReplayedRejection } from "../machines/agent.ts";
import type { AgentContext, AgentEvent } from "../machines/types.ts";
import type { NewEvent } from "../common/events.ts";
import { isRuntimeEventType } from "../machines/event-log.ts";
import { checkReview, type CheckedReview, type Guardian, outputVerifierCode } from "../verdicts/guardian.ts";
import { deepFreeze } from "../common/freeze.ts";
import { isPlainObject, type Json, jsonCopy } from "../common/json.ts";
import type { GuardianVerdictSnapshot, VerdictFlag, VerdictStatus } from "../verdicts/snapshot.ts";
import { candidateHash } from "./hash.ts";
import type { ReviewKey, VerdictDraft, VerdictRecorder } from "./recorder.ts";
import { VerificationRejected } from "./rejected.ts";
import type { VerifyContext } from "../common/verifier.ts";

export type AttemptOutcome =
  | { kind: "passed"; result: Json }
  | {
    kind: "rejected";
    code: string;
    message: string;
    retryable: boolean;
    metadata?: Record<string, Json>;
    /** A retryable rejection that used the last attempt. */
    exhausted: boolean;
  }
  | { kind: "system_error"; message: string };

/** What `afterAttempt` is told about an attempt. */
export interface AttemptInfo {
  agentName: string;
  agentId: string;
  turnId: string;
  toolCallId: string;
  attempt: number;
  maxAttempts: number;
  candidateHash: string;
  /** The attempt re-reports a rejection already counted. */
  replayed: boolean;
  outcome: AttemptOutcome;
  /** Verdicts of this attempt (written, found written, or recalled), in review order. */
  verdicts: GuardianVerdictSnapshot[];
  durationMs: number;
  now: number;
}

/** Extension points of the gate; createGatehouse() fills `guardians` and `verdicts` from its registry. */
export interface VerificationHooks {
  /** Guardians assigned to an agent beyond its output verifier, in review order. */
  guardians?(agentName: string): readonly Guardian[];
  /** Where verdicts go; null or absent: none are written (and none adopted). */
  verdicts?: VerdictRecorder | null;
  /**
   * Runs after every attempt; its events go into the attempt's commit. A throw is logged as an event and
   * ignored, and so are events of a type the runtime writes (`EVENT_TYPES` of machines/event-log.ts): a
   * hook's events are of its own types (the OpenAPI `CustomEvent`).
   */
  afterAttempt?(info: AttemptInfo): Promise<{ events: NewEvent[] }> | { events: NewEvent[] };
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
  /** Base backoff after a system error; doubled per error of the same candidate. */
  backoffMs: number;
  signal: AbortSignal;
  hooks?: VerificationHooks;
}

export interface GateResult {
  /** Events logged before the transition (every gate event: cause before effect). */
  before: NewEvent[];
  event: AgentEvent;
}

/** Feedback and error texts from user code are cut to this length. */
const TEXT_LIMIT = 4_000;

const errorText = (err: unknown) => {
  const m = err instanceof Error ? err.message : String(err);
  return m.length > TEXT_LIMIT ? m.slice(0, TEXT_LIMIT) + "…" : m;
};

/** `VerificationRejected`, also from another copy of the module. */
export function asRejection(err: unknown): VerificationRejected | null {
  if (err instanceof VerificationRejected) return err;
  const e = err as Partial<VerificationRejected> | null;
  return e && typeof e === "object" && e.name === "VerificationRejected" && typeof e.code === "string" &&
      typeof e.retryable === "boolean" && typeof e.message === "string"
    ? e as VerificationRejected
    : null;
}

type Parsed = { ok: true; value: unknown } | { ok: false; error: z.ZodError };
type Judged = { review: CheckedReview } | { failure: string };

function parseCandidate(agent: AnyAgent, args: unknown): Parsed {
  const schema = agent.output?.schema;
  if (!schema) return { ok: true, value: args };
  const r = schema.safeParse(args);
  return r.success ? { ok: true, value: r.data } : { ok: false, error: r.error };
}

function schemaRejection(error: z.ZodError, exhausted: boolean): AttemptOutcome {
  return {
    kind: "rejected",
    code: "schema_invalid",
    message: `The output does not match the schema:\n${z.prettifyError(error)}`,
    retryable: true,
    metadata: {
      issues: error.issues.map((i) => ({
        path: i.path.map((p) => (typeof p === "symbol" ? String(p) : p)),
        code: i.code,
        message: i.message,
      })),
    },
    exhausted,
  };
}

function systemError(a: GateArgs, message: string, events: NewEvent[], base: Record<string, unknown>): GateResult {
  const v = a.context.verification;
  const at = a.now();
  const retryAt = at + a.backoffMs * 2 ** v.systemErrors;
  events.push({
    type: "verification_error",
    data: { ...base, message, systemErrors: v.systemErrors + 1, final: isLastVerifierError(a.context), retryAt },
  });
  return { before: events, event: { type: "VERIFY_ERROR", at, message, retryAt } };
}

export async function runVerification(a: GateArgs): Promise<GateResult> {
  try {
    return await gate(a);
  } catch (err) {
    // A failure outside the judgments (hashing, a hook that throws): a system error, never a crash of the claim.
    const toolCallId = a.context.verification.candidate?.toolCallId ?? null;
    return systemError(a, `The verifier gate failed: ${errorText(err)}`, [], { toolCallId });
  }
}

/**
 * The gate of one attempt, step by step: prepare the attempt, pass an
 * ungated candidate at once, judge it (output verifier, then guardians, each
 * through its verdict), let `afterAttempt` add its events, and answer.
 */
async function gate(a: GateArgs): Promise<GateResult> {
  const cand = a.context.verification.candidate;
  if (!cand) return systemError(a, "verifying has no candidate", [], { toolCallId: null });
  const att = await prepareAttempt(a, cand);
  if (!att.gated && att.parsed.ok) {
    return { before: [], event: { type: "VERIFY_PASSED", at: a.now(), hash: att.hash, result: att.candidateJson } };
  }

  const events: NewEvent[] = [{ type: "verification_started", data: { ...att.base, replayed: att.replayed } }];
  const verdicts: GuardianVerdictSnapshot[] = [];
  const started = a.now();
  const judge = verdictJudge(a, att, events, verdicts);
  const verifyCtx = verifyContextOf(a, att);

  let outcome: AttemptOutcome;
  try {
    outcome = await attemptOutcome(a, att, judge, verifyCtx);
  } catch (err) {
    outcome = { kind: "system_error", message: `Verification could not be recorded: ${errorText(err)}` };
  }

  const durationMs = a.now() - started;
  const tail = await afterAttemptEvents(a, att, outcome, verdicts, durationMs);
  return answer(a, att, outcome, events, tail, durationMs);
}

type Candidate = NonNullable<AgentContext["verification"]["candidate"]>;

/** What one attempt judges, who judges it, and how it counts. */
interface Attempt {
  cand: Candidate;
  guardians: readonly Guardian[];
  verifier: NonNullable<AnyAgent["output"]>["verify"];
  /** The agent has a verifier or guardians: verdicts are recorded and events logged. */
  gated: boolean;
  recorder: VerdictRecorder | null;
  parsed: Parsed;
  /** The parsed candidate's JSON form (what is hashed and kept). */
  candidateJson: Json;
  hash: string;
  /** The same candidate of the same call was already rejected (not counted again). */
  replayed: boolean;
  attempt: number;
  maxAttempts: number;
  lastAttempt: boolean;
  /** A system error now would be the one that fails the turn. */
  lastError: boolean;
  /** Data every event of the attempt carries. */
  base: { toolCallId: string; attempt: number; maxAttempts: number; candidateHash: string };
  identity: Identity;
}

/** Parses and hashes the candidate and counts the attempt (the statechart's accounting, machines/agent.ts). */
async function prepareAttempt(a: GateArgs, cand: Candidate): Promise<Attempt> {
  const v = a.context.verification;
  const agent = a.agent;
  const guardians = a.hooks?.guardians?.(agent.name) ?? [];
  const verifier = agent.output?.verify;
  const gated = verifier !== undefined || guardians.length > 0;
  const recorder = gated ? a.hooks?.verdicts ?? null : null;

  const parsed = parseCandidate(agent, cand.args);
  // The parsed value is what is hashed and kept; a schema whose transforms
  // yield something without a JSON form falls back to the arguments as sent.
  let candidateJson: Json;
  try {
    candidateJson = jsonCopy(parsed.ok ? parsed.value : cand.args, "candidate");
  } catch {
    candidateJson = jsonCopy(cand.args, "candidate");
  }
  const hash = await candidateHash(candidateJson);
  const attempt = attemptNumber(v, hash);
  const maxAttempts = v.maxAttempts;
  return {
    cand, guardians, verifier, gated, recorder, parsed, candidateJson, hash,
    replayed: isReplayedRejection(v, hash),
    attempt, maxAttempts,
    lastAttempt: attempt >= maxAttempts,
    lastError: isLastVerifierError(a.context),
    base: { toolCallId: cand.toolCallId, attempt, maxAttempts, candidateHash: hash },
    identity: { candidateHash: hash, attempt, maxAttempts },
  };
}

/**
 * Looks a review's verdict up (adopting it), or runs the review and records
 * its draft. `local` is the review's own outcome, used when no verdict is
 * recorded (no recorder, a system error below the bound, or a worker that
 * lost the agent meanwhile).
 */
type Judge = <T>(
  guardianCode: string,
  run: () => Promise<{ local: T; draft: VerdictDraft | null }>,
) => Promise<{ recorded: GuardianVerdictSnapshot } | { local: T }>;

/** The judge of one attempt: every verdict it adopts or writes is noted in `verdicts` and logged in `events`. */
function verdictJudge(a: GateArgs, att: Attempt, events: NewEvent[], verdicts: GuardianVerdictSnapshot[]): Judge {
  const { recorder } = att;
  const keyOf = (guardianCode: string): ReviewKey => ({
    agentId: a.agentId,
    agentName: a.agent.name,
    turnId: a.turnId,
    toolCallId: att.cand.toolCallId,
    guardianCode,
  });
  const note = (verdict: GuardianVerdictSnapshot, how: "written" | "exists" | "recalled") => {
    verdicts.push(verdict);
    events.push({
      type: "verdict_recorded",
      data: { ...att.base, verdictId: verdict.verdictId, guardianCode: verdict.guardianCode, status: verdict.status, how },
    });
  };
  return async (guardianCode, run) => {
    const key = keyOf(guardianCode);
    if (recorder) {
      const prior = await recorder.recall(key);
      if (prior) {
        note(prior, "recalled");
        return { recorded: prior };
      }
    }
    const { local, draft } = await run();
    if (draft === null || !recorder || a.signal.aborted) return { local };
    const r = await recorder.record(key, draft);
    note(r.verdict, r.status);
    return { recorded: r.verdict };
  };
}

/** What the output verifier and the guardians are shown (frozen; the input is a copy). */
function verifyContextOf(a: GateArgs, att: Attempt): VerifyContext {
  const v = a.context.verification;
  return {
    agent: deepFreeze({
      agentId: a.agentId,
      name: a.agent.name,
      turnId: a.turnId,
      input: structuredClone(a.input),
      step: a.context.step,
      verification: {
        attemptsUsed: v.attemptsUsed,
        lastCandidateHash: v.lastCandidateHash,
        lastOutcome: v.lastOutcome,
        lastAttemptAt: v.lastAttemptAt,
      },
    }),
    execution: Object.freeze({
      workerId: a.workerId,
      epoch: a.epoch,
      toolCallId: att.cand.toolCallId,
      candidateHash: att.hash,
      signal: a.signal,
    }),
    attempt: att.attempt,
    maxAttempts: att.maxAttempts,
  };
}

/** The schema, then `output.verify`: a return value passes, `VerificationRejected` rejects, any other throw is a system error. */
async function runOutputVerifier(a: GateArgs, att: Attempt, verifyCtx: VerifyContext): Promise<AttemptOutcome> {
  const { parsed, verifier, candidateJson, lastAttempt } = att;
  if (!parsed.ok) return schemaRejection(parsed.error, lastAttempt);
  if (!verifier) return { kind: "passed", result: candidateJson };
  let returned: unknown;
  try {
    returned = await verifier.call(a.agent.output, parsed.value, verifyCtx);
  } catch (err) {
    const rej = asRejection(err);
    if (!rej) return { kind: "system_error", message: `output.verify threw: ${errorText(err)}` };
    let metadata: Record<string, Json> | undefined;
    if (rej.metadata !== undefined) {
      try {
        metadata = jsonCopy(rej.metadata, "metadata") as Record<string, Json>;
      } catch (e) {
        return { kind: "system_error", message: `VerificationRejected ${errorText(e)}` };
      }
    }
    return {
      kind: "rejected",
      code: rej.code,
      message: errorText(rej.message),
      retryable: rej.retryable,
      ...(metadata !== undefined ? { metadata } : {}),
      exhausted: rej.retryable && lastAttempt,
    };
  }
  if (returned === undefined) return { kind: "passed", result: candidateJson };
  try {
    return { kind: "passed", result: jsonCopy(returned, "result") };
  } catch (e) {
    return { kind: "system_error", message: `output.verify returned a value without a JSON form: ${errorText(e)}` };
  }
}

/** Every judgment of the attempt: the output verifier, then each guardian in order; a throw here (a store failure) is a system error. */
async function attemptOutcome(a: GateArgs, att: Attempt, judge: Judge, verifyCtx: VerifyContext): Promise<AttemptOutcome> {
  const { identity, lastError, lastAttempt, guardians } = att;
  const systemErrors = a.context.verification.systemErrors;
  const t0 = a.now();
  const ov = await judge(outputVerifierCode(a.agent.name), async () => {
    const o = await runOutputVerifier(a, att, verifyCtx);
    const draft = o.kind === "system_error" && !lastError ? null : outputDraft(o, a.now() - t0, identity, systemErrors + 1);
    return { local: o, draft };
  });
  const out = "recorded" in ov ? outcomeOfOutputVerdict(ov.recorded) : ov.local;
  if (out.kind !== "passed" || guardians.length === 0) return out;

  const candidate = att.parsed.ok ? att.parsed.value : att.cand.args;
  const reviews: Array<{ code: string; review: CheckedReview }> = [];
  for (const g of guardians) {
    const t1 = a.now();
    const gj = await judge<Judged>(g.code, async () => {
      let review: CheckedReview;
      try {
        review = checkReview(await g.review(candidate, { ...verifyCtx, result: out.result }), g.code);
      } catch (err) {
        const failure = `Guardian "${g.code}" failed: ${errorText(err)}`;
        return { local: { failure }, draft: lastError ? systemErrorDraft(failure, identity, systemErrors + 1) : null };
      }
      return { local: { review }, draft: guardianDraft(review, lastAttempt, a.now() - t1, identity) };
    });
    const judged = "recorded" in gj ? reviewOfVerdict(gj.recorded) : gj.local;
    if ("failure" in judged) return { kind: "system_error", message: judged.failure };
    reviews.push({ code: g.code, review: judged.review });
  }
  return combine(out.result, reviews, lastAttempt);
}

/** The events of the `afterAttempt` hook (none without one); a hook that throws or logs a runtime type is `verification_hook_failed`. */
async function afterAttemptEvents(
  a: GateArgs,
  att: Attempt,
  outcome: AttemptOutcome,
  verdicts: GuardianVerdictSnapshot[],
  durationMs: number,
): Promise<NewEvent[]> {
  const tail: NewEvent[] = [];
  if (!a.hooks?.afterAttempt) return tail;
  try {
    const r = await a.hooks.afterAttempt({
      agentName: a.agent.name, agentId: a.agentId, turnId: a.turnId, toolCallId: att.cand.toolCallId, attempt: att.attempt, maxAttempts: att.maxAttempts,
      candidateHash: att.hash, replayed: att.replayed, outcome, verdicts: [...verdicts], durationMs, now: a.now(),
    });
    const added = r?.events ?? [];
    // A hook's events are of its own types: one of a type the runtime writes would carry data the
    // catalogue (machines/event-log.ts) does not describe, and a `transition` would change what replays.
    const taken = added.find((e) => isRuntimeEventType(e.type));
    if (taken) throw new Error(`Cannot log hook event "${taken.type}": the runtime writes that type`);
    tail.push(...added);
  } catch (err) {
    tail.push({ type: "verification_hook_failed", data: { ...att.base, message: errorText(err) } });
  }
  return tail;
}

/** The machine event of the outcome, after the attempt's events and then the hook's (`tail`). */
function answer(a: GateArgs, att: Attempt, outcome: AttemptOutcome, events: NewEvent[], tail: NewEvent[], durationMs: number): GateResult {
  const { base, attempt, hash, replayed } = att;
  const at = a.now();
  switch (outcome.kind) {
    case "passed":
      events.push(
        { type: "verification_passed", data: { ...base, durationMs } },
        { type: "verification_attempt_counted", data: { ...base, attemptsUsed: attempt } },
        ...tail,
      );
      return { before: events, event: { type: "VERIFY_PASSED", at, hash, result: outcome.result } };
    case "rejected": {
      events.push({
        type: "verification_rejected",
        data: { ...base, code: outcome.code, message: outcome.message, retryable: outcome.retryable, replayed, durationMs },
      });
      if (!replayed) events.push({ type: "verification_attempt_counted", data: { ...base, attemptsUsed: attempt } });
      if (outcome.exhausted) events.push({ type: "verification_exhausted", data: { ...base, attemptsUsed: attempt } });
      events.push(...tail);
      return {
        before: events,
        event: {
          type: "VERIFY_REJECTED",
          at,
          hash,
          code: outcome.code,
          message: outcome.message,
          retryable: outcome.retryable,
          ...(outcome.metadata !== undefined ? { metadata: outcome.metadata } : {}),
        },
      };
    }
    case "system_error":
      events.push(...tail);
      return systemError(a, outcome.message, events, base);
  }
}

// ------------------------------------------------------------ verdict forms

type Identity = { candidateHash: string; attempt: number; maxAttempts: number };

const exhaustedFlag = (i: Identity): VerdictFlag => ({
  severity: "critical",
  code: "verification_exhausted",
  message: `Attempt ${i.attempt} of ${i.maxAttempts} was rejected; no attempts are left`,
});

/** The output verifier's verdict: evidence holds the accepted result, or the rejection's metadata; always the duration. */
export function outputDraft(o: AttemptOutcome, durationMs: number, i: Identity, systemErrors: number): VerdictDraft {
  switch (o.kind) {
    case "passed":
      return {
        status: "PASS",
        flags: [],
        evidence: { durationMs, result: o.result },
        recommendations: [],
        metadata: { ...i, outcome: "passed" },
      };
    case "rejected": {
      const final = !o.retryable || o.exhausted;
      return {
        status: final ? "FAIL" : "NEEDS_CHANGES",
        flags: [
          { severity: o.retryable ? "error" : "critical", code: o.code, message: o.message },
          ...(o.exhausted ? [exhaustedFlag(i)] : []),
        ],
        evidence: { durationMs, ...(o.metadata !== undefined ? { metadata: o.metadata } : {}) },
        recommendations: final ? [] : [`Revise the output to resolve "${o.code}" and call agent_output again`],
        metadata: { ...i, outcome: "rejected", code: o.code, message: o.message, retryable: o.retryable },
      };
    }
    case "system_error":
      return systemErrorDraft(o.message, i, systemErrors);
  }
}

/** The FAIL verdict of the system error that fails the turn (`verifier_error`). */
export function systemErrorDraft(message: string, i: Identity, systemErrors: number): VerdictDraft {
  return {
    status: "FAIL",
    flags: [{ severity: "critical", code: "verifier_error", message }],
    evidence: { systemErrors },
    recommendations: [],
    metadata: { ...i, outcome: "system_error", message },
  };
}

/** A guardian's verdict: its own flags, evidence and recommendations; NEEDS_CHANGES on the last attempt is written FAIL. */
export function guardianDraft(r: CheckedReview, lastAttempt: boolean, durationMs: number, i: Identity): VerdictDraft {
  const exhausted = r.status === "NEEDS_CHANGES" && lastAttempt;
  const status: VerdictStatus = exhausted ? "FAIL" : r.status;
  return {
    status,
    flags: [...r.flags, ...(exhausted ? [exhaustedFlag(i)] : [])],
    evidence: r.evidence,
    recommendations: r.recommendations,
    metadata: { ...i, outcome: "reviewed", reviewStatus: r.status, message: r.message, durationMs },
  };
}

const unreadable = (v: GuardianVerdictSnapshot) =>
  new Error(`Verdict "${v.verdictId}" of guardian "${v.guardianCode}" does not record a gate outcome`);

/** The outcome an output verifier's verdict records. */
export function outcomeOfOutputVerdict(v: GuardianVerdictSnapshot): AttemptOutcome {
  const m = v.metadata;
  if (m.outcome === "passed" && "result" in v.evidence) {
    return { kind: "passed", result: structuredClone(v.evidence.result) as Json };
  }
  if (m.outcome === "rejected" && typeof m.code === "string" && typeof m.message === "string" && typeof m.retryable === "boolean") {
    const metadata = v.evidence.metadata;
    return {
      kind: "rejected",
      code: m.code,
      message: m.message,
      retryable: m.retryable,
      ...(isPlainObject(metadata) ? { metadata: structuredClone(metadata) as Record<string, Json> } : {}),
      exhausted: v.flags.some((f) => f.code === "verification_exhausted"),
    };
  }
  if (m.outcome === "system_error" && typeof m.message === "string") return { kind: "system_error", message: m.message };
  throw unreadable(v);
}

/** The review a guardian's verdict records, or the system error it recorded. */
export function reviewOfVerdict(v: GuardianVerdictSnapshot): Judged {
  const m = v.metadata;
  if (m.outcome === "system_error" && typeof m.message === "string") return { failure: m.message };
  if (m.outcome !== "reviewed" || typeof m.reviewStatus !== "string") throw unreadable(v);
  return {
    review: checkReview({
      status: m.reviewStatus,
      message: typeof m.message === "string" ? m.message : "",
      flags: v.flags.filter((f) => f.code !== "verification_exhausted").map((f) => structuredClone(f)),
      evidence: structuredClone(v.evidence),
      recommendations: [...v.recommendations],
    }, v.guardianCode),
  };
}

/** All guardians PASS: the verifier's result stands. Otherwise one rejection naming every guardian that did not pass. */
export function combine(result: Json, reviews: Array<{ code: string; review: CheckedReview }>, lastAttempt: boolean): AttemptOutcome {
  const objecting = reviews.filter((r) => r.review.status !== "PASS");
  if (objecting.length === 0) return { kind: "passed", result };
  const retryable = objecting.every((r) => r.review.status === "NEEDS_CHANGES");
  const message = objecting.map(({ code, review }) => {
    const head = `${code} (${review.status}): ${review.message || "no message"}`;
    return [head, ...review.recommendations.map((x) => `- ${x}`)].join("\n");
  }).join("\n");
  return {
    kind: "rejected",
    code: objecting[0].code,
    message,
    retryable,
    metadata: { guardians: objecting.map((r) => ({ code: r.code, status: r.review.status })) },
    exhausted: retryable && lastAttempt,
  };
}
