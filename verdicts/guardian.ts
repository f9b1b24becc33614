/**
 * defineGuardian(): a reviewer that judges an agent's accepted output. When
 * assigned to an agent (`defineAgent({ guardians })`, or
 * `createGatehouse({ guardians, assignments })`), it runs in `verifying` after
 * the output verifier passed, and every review becomes a verdict. All
 * guardians must answer PASS for the turn to be `done`: NEEDS_CHANGES is fed
 * back to the model like a retryable rejection, FAIL fails the turn. A
 * review that throws is a system error (retried with backoff, not counted).
 *
 * `review(candidate, ctx)` follows the verifier signature rules
 * (common/verifier-shape.ts); `ctx` is the verifier's context plus
 * `result`, the value the output verifier accepted.
 *
 * @example
 * const noSecrets = defineGuardian({
 *   code: "no_secrets",
 *   review: (candidate: { summary: string }) =>
 *     /sk-[a-z0-9]{8,}/i.test(candidate.summary)
 *       ? { status: "NEEDS_CHANGES", message: "The summary contains an API key", recommendations: ["Remove the key"] }
 *       : { status: "PASS" },
 * });
 */
import { DefinitionError } from "../errors/errors.ts";
import { checkVerifierShape } from "../common/verifier-shape.ts";
import type { VerifyContext } from "../common/verifier.ts";
import { VerdictError } from "./errors.ts";
import { isPlainObject, type Json, jsonCopy, JsonValueError } from "../common/json.ts";
import { VERDICT_STATUSES, type VerdictFlag, type VerdictStatus } from "./snapshot.ts";
import { ID_PATTERN } from "../common/ids.ts";

/** Guardian codes: a token; `output_verifier:` is reserved for agents' output verifiers. */
export const GUARDIAN_CODE = ID_PATTERN;
export const OUTPUT_VERIFIER_PREFIX = "output_verifier:";

/** The guardian code of an agent's output verifier. */
export const outputVerifierCode = (agentName: string) => `${OUTPUT_VERIFIER_PREFIX}${agentName}`;

export interface GuardianReviewContext extends VerifyContext {
  /** What the output verifier returned (the turn's output if every guardian passes). */
  result: unknown;
}

/** What a review returns. Only `status` is required. */
export interface GuardianReview {
  status: VerdictStatus;
  /** One line for the model and the log (default: the flags' messages). */
  message?: string;
  flags?: Array<Record<string, unknown>>;
  evidence?: Record<string, unknown>;
  recommendations?: string[];
}

export interface GuardianConfig<C = any> {
  code: string;
  description?: string;
  review: (candidate: C, ctx: GuardianReviewContext) => GuardianReview | Promise<GuardianReview>;
}

export interface Guardian<C = any> extends Readonly<GuardianConfig<C>> {
  readonly kind: "guardian";
}

export function defineGuardian<C = any>(config: GuardianConfig<C>): Guardian<C> {
  if (!isPlainObject(config)) throw new DefinitionError("defineGuardian() needs a config object");
  const where = `Guardian ${JSON.stringify(config.code)}`;
  if (typeof config.code !== "string" || !GUARDIAN_CODE.test(config.code)) {
    throw new DefinitionError(`${where}: code must match ${GUARDIAN_CODE}`);
  }
  if (config.code.startsWith(OUTPUT_VERIFIER_PREFIX)) {
    throw new DefinitionError(`${where}: codes starting with "${OUTPUT_VERIFIER_PREFIX}" are reserved for output verifiers`);
  }
  if (config.description !== undefined && typeof config.description !== "string") {
    throw new DefinitionError(`${where}: description must be a string`);
  }
  checkVerifierShape(config.review, `${where}: review`);
  for (const k of Object.keys(config)) {
    if (!["code", "description", "review"].includes(k)) {
      throw new DefinitionError(`${where}: unknown key "${k}"; it takes code, description, review`);
    }
  }
  return Object.freeze({ ...config, kind: "guardian" as const });
}

/** A checked review: a JSON copy with every member present. */
export interface CheckedReview {
  status: VerdictStatus;
  message: string;
  flags: VerdictFlag[];
  evidence: Record<string, Json>;
  recommendations: string[];
}

/** Validates what `review` returned; throws `VerdictError("invalid_verdict", field)`. */
export function checkReview(raw: unknown, code: string): CheckedReview {
  const where = `Guardian "${code}" returned`;
  if (!isPlainObject(raw)) throw new VerdictError("invalid_verdict", "(review)", `${where} no review object`);
  if (!(VERDICT_STATUSES as readonly unknown[]).includes(raw.status)) {
    throw new VerdictError("invalid_verdict", "status", `${where} status ${JSON.stringify(raw.status)}; expected PASS, NEEDS_CHANGES or FAIL`);
  }
  if (raw.message !== undefined && typeof raw.message !== "string") {
    throw new VerdictError("invalid_verdict", "message", `${where} a message that is not a string`);
  }
  if (raw.flags !== undefined && (!Array.isArray(raw.flags) || !raw.flags.every(isPlainObject))) {
    throw new VerdictError("invalid_verdict", "flags", `${where} flags that are not a list of objects`);
  }
  if (raw.evidence !== undefined && !isPlainObject(raw.evidence)) {
    throw new VerdictError("invalid_verdict", "evidence", `${where} evidence that is not an object`);
  }
  if (raw.recommendations !== undefined && (!Array.isArray(raw.recommendations) || !raw.recommendations.every((r) => typeof r === "string"))) {
    throw new VerdictError("invalid_verdict", "recommendations", `${where} recommendations that are not a list of strings`);
  }
  let flags: VerdictFlag[];
  let evidence: Record<string, Json>;
  try {
    flags = jsonCopy(raw.flags ?? [], "flags") as VerdictFlag[];
    evidence = jsonCopy(raw.evidence ?? {}, "evidence") as Record<string, Json>;
  } catch (err) {
    if (err instanceof JsonValueError) throw new VerdictError("invalid_verdict", err.path, `${where} ${err.message}`);
    throw err;
  }
  const message = (raw.message as string | undefined) ??
    flags.map((f) => (typeof f.message === "string" ? f.message : "")).filter((m) => m !== "").join("; ");
  return {
    status: raw.status as VerdictStatus,
    message,
    flags,
    evidence,
    recommendations: [...(raw.recommendations as string[] | undefined ?? [])],
  };
}
