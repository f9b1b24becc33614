/**
 * Verifier what-if: judge the recorded `agent_output` candidates of an
 * agent's past turns again, with a registered guardian or with the output
 * verifier its definition has now, and set each new judgment next to the
 * one the turn recorded.
 *
 * Read-only by construction: this module gets the log as data and returns
 * data; it has no store, writes no verdict, logs no event (the route that
 * calls it reads only; tests/debug/debug-routes.test.ts compares the whole store
 * before and after). What the verifier itself does is its own business:
 * it is called as the gate calls it, with an execution context whose
 * `workerId` is `what-if`, epoch 0 and a signal aborted after `timeoutMs`.
 */
import type { AnyAgent } from "../agents/define.ts";
import type { StoredEvent } from "../common/events.ts";
import { jsonCopy } from "../common/json.ts";
import type { VerifyContext } from "../common/verifier.ts";
import { AGENT_OUTPUT } from "../machines/types.ts";
import { checkReview, type Guardian } from "../verdicts/guardian.ts";
import { asRejection } from "./gate.ts";
import { candidateHash } from "./hash.ts";

export type WhatIfVerifier =
  | { kind: "output_verifier"; name: string; agent: AnyAgent }
  | { kind: "guardian"; name: string; guardian: Guardian };

export interface Judgment {
  outcome: "passed" | "rejected" | "system_error";
  code?: string;
  message?: string;
}

export interface WhatIfCandidate {
  eventId: number;
  turnId: string | null;
  toolCallId: string;
  candidate: unknown;
  recorded: (Judgment & { eventId: number }) | null;
  now: Judgment;
  changed: boolean;
}

/** The `agent_output` calls of a log, in order, with the gate's recorded judgment of each. */
export function recordedCandidates(events: StoredEvent[]): Array<Omit<WhatIfCandidate, "now" | "changed">> {
  const out: Array<Omit<WhatIfCandidate, "now" | "changed">> = [];
  for (const e of events) {
    if (e.type !== "tool_call" || e.data.name !== AGENT_OUTPUT) continue;
    const toolCallId = String(e.data.toolCallId);
    let recorded: WhatIfCandidate["recorded"] = null;
    for (const f of events) {
      if (f.id <= e.id) continue;
      const d = f.data as Record<string, unknown>;
      if (d.toolCallId === toolCallId) {
        // The gate's last word on this call wins (a system error may be followed by a judgment).
        if (f.type === "verification_passed") recorded = { outcome: "passed", eventId: f.id };
        else if (f.type === "verification_rejected") {
          recorded = { outcome: "rejected", code: String(d.code), message: String(d.message), eventId: f.id };
        } else if (f.type === "verification_error") recorded = { outcome: "system_error", message: String(d.message ?? ""), eventId: f.id };
      }
    }
    if (recorded === null) {
      // No gate events (an agent without a verifier): the transition out of verifying says it.
      const t = events.find((f) => {
        if (f.id <= e.id || f.type !== "transition") return false;
        const type = (f.data.event as { type?: string } | undefined)?.type;
        return type === "VERIFY_PASSED" || type === "VERIFY_REJECTED";
      });
      if (t) {
        const ev = t.data.event as { type: string; code?: string; message?: string };
        recorded = ev.type === "VERIFY_PASSED"
          ? { outcome: "passed", eventId: t.id }
          : { outcome: "rejected", code: String(ev.code), message: String(ev.message), eventId: t.id };
      }
    }
    out.push({ eventId: e.id, turnId: e.turnId, toolCallId, candidate: e.data.args, recorded });
  }
  return out;
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

async function judge(
  v: WhatIfVerifier,
  c: { turnId: string | null; toolCallId: string; candidate: unknown },
  ctx: { agentId: string; agentName: string; input: unknown; timeoutMs: number },
): Promise<Judgment> {
  const agent = v.kind === "output_verifier" ? v.agent : null;
  let value: unknown = c.candidate;
  if (agent?.output?.schema) {
    const r = agent.output.schema.safeParse(c.candidate);
    if (!r.success) return { outcome: "rejected", code: "schema_invalid", message: "The output does not match the schema" };
    value = r.data;
  }
  let hashed: unknown;
  try {
    hashed = jsonCopy(value, "candidate");
  } catch {
    hashed = c.candidate ?? null; // a schema whose transforms leave JSON: hash the arguments as sent, as the gate does
  }
  const hash = await candidateHash(hashed);
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), ctx.timeoutMs);
  const verifyCtx: VerifyContext = {
    agent: {
      agentId: ctx.agentId,
      name: ctx.agentName,
      turnId: c.turnId ?? "",
      input: structuredClone(ctx.input),
      step: 0,
      verification: { attemptsUsed: 0, lastCandidateHash: null, lastOutcome: null, lastAttemptAt: null },
    },
    execution: { workerId: "what-if", epoch: 0, toolCallId: c.toolCallId, candidateHash: hash, signal: abort.signal },
    attempt: 1,
    maxAttempts: 1,
  };
  const timeout = new Promise<never>((_, reject) =>
    abort.signal.addEventListener("abort", () => reject(new Error(`no answer within ${ctx.timeoutMs} ms`)))
  );
  try {
    if (v.kind === "output_verifier") {
      const verify = v.agent.output?.verify;
      if (!verify) return { outcome: "passed" };
      await Promise.race([Promise.resolve(verify.call(v.agent.output, value, verifyCtx)), timeout]);
      return { outcome: "passed" };
    }
    const review = checkReview(await Promise.race([Promise.resolve(v.guardian.review(value, { ...verifyCtx, result: value })), timeout]), v.guardian.code);
    return review.status === "PASS"
      ? { outcome: "passed" }
      : { outcome: "rejected", code: review.status, message: review.message };
  } catch (err) {
    const rej = asRejection(err);
    if (rej) return { outcome: "rejected", code: rej.code, message: rej.message };
    return { outcome: "system_error", message: errorText(err) };
  } finally {
    clearTimeout(timer);
  }
}

/** Whether one more candidate may be judged: a charge against the caller's rate limits, or its refusal. */
export type WhatIfCharge = () => Promise<{ ok: true } | { ok: false; retryAfterMs: number }>;

/** What one what-if judged, and why it stopped where it did. */
export interface WhatIfRun {
  candidates: WhatIfCandidate[];
  /** Recorded candidates after `after` (judged or not). */
  total: number;
  /** Why candidates after `after` were left unjudged: the cap, a refused charge, or null (all judged). */
  stopped: "candidate_cap" | "rate_limited" | null;
  /** The `after` that judges the next ones (the last judged candidate's event id; `after` itself when none was); null when none are left. */
  nextAfter: number | null;
  /** With `stopped: "rate_limited"`: how long until the refused charge would be admitted. */
  retryAfterMs?: number;
}

/**
 * Judges the recorded candidates of `events` after event `after` (default 0)
 * again with `verifier`, one at a time, in log order: at most `max` of them,
 * and each only once `charge` admitted it (a refusal stops the run there;
 * nothing after it is judged). Every judged candidate calls the verifier at
 * most once.
 */
export async function whatIf(args: {
  verifier: WhatIfVerifier;
  events: StoredEvent[];
  agentId: string;
  agentName: string;
  inputOf: (turnId: string) => Promise<unknown>;
  timeoutMs?: number;
  after?: number;
  max?: number;
  charge?: WhatIfCharge;
}): Promise<WhatIfRun> {
  const after = args.after ?? 0;
  const max = args.max ?? Number.POSITIVE_INFINITY;
  const all = recordedCandidates(args.events).filter((c) => c.eventId > after);
  const out: WhatIfCandidate[] = [];
  const stop = (stopped: "candidate_cap" | "rate_limited", retryAfterMs?: number): WhatIfRun => ({
    candidates: out,
    total: all.length,
    stopped,
    nextAfter: out.length > 0 ? out[out.length - 1].eventId : after,
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  });
  for (const c of all) {
    if (out.length >= max) return stop("candidate_cap");
    if (args.charge) {
      const admitted = await args.charge();
      if (!admitted.ok) return stop("rate_limited", admitted.retryAfterMs);
    }
    const input = c.turnId ? await args.inputOf(c.turnId) : null;
    const now = await judge(args.verifier, c, {
      agentId: args.agentId, agentName: args.agentName, input, timeoutMs: args.timeoutMs ?? 30_000,
    });
    const changed = c.recorded === null || c.recorded.outcome !== now.outcome || (c.recorded.code ?? null) !== (now.code ?? null);
    out.push({ ...c, now, changed });
  }
  return { candidates: out, total: all.length, stopped: null, nextAfter: null };
}
