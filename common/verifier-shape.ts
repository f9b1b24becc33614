/**
 * Signature rules of verifiers and guardian reviews, checked at definition
 * time so a bad one fails at startup, not in the middle of a turn.
 *
 * Discovery: an agent's verifier is `output.verify` and nothing else. The
 * `output` object takes only `schema`, `verify` and `verifyAttempts`; any
 * other key (`verifier`, `validate`, `maxAttempts`, …) is refused, so a typo
 * never silently turns the gate off.
 *
 * Shape: `(candidate, ctx) => result | Promise<result>`, where `ctx` is
 * `{ agent, execution, attempt, maxAttempts }`. A function may declare only
 * what it uses: `()`, `(candidate)` and `(candidate, { attempt })` are all
 * fine. Refused, each with a `DefinitionError` that says why:
 * - anything that is not a function;
 * - a class (it cannot be called);
 * - a generator or async generator function (calling it returns an
 *   iterator and runs none of its checks, so every candidate would pass);
 * - more than two declared parameters (`(candidate, agent, execution)`):
 *   the context comes as one object, destructure it instead.
 */
import { DefinitionError } from "../errors/errors.ts";
import { closestKey, unknownKeyMessage } from "./known-keys.ts";

/** Largest number of declared parameters: `(candidate, ctx)`. */
export const MAX_VERIFIER_PARAMS = 2;

/**
 * Checks a verifier-like function; `what` names it in errors, e.g.
 * `Agent "fixer": output.verify`.
 */
export function checkVerifierShape(fn: unknown, what: string): void {
  if (typeof fn !== "function") {
    throw new DefinitionError(
      `${what} must be a function (candidate, { agent, execution, attempt, maxAttempts }) => result, got ${
        fn === null ? "null" : typeof fn
      }`,
    );
  }
  const tag = Object.prototype.toString.call(fn);
  if (tag === "[object GeneratorFunction]" || tag === "[object AsyncGeneratorFunction]") {
    throw new DefinitionError(
      `${what} must not be a generator function: calling it would return an iterator without running any check`,
    );
  }
  if (/^class[\s{]/.test(Function.prototype.toString.call(fn))) {
    throw new DefinitionError(`${what} must be a function, not a class`);
  }
  if (fn.length > MAX_VERIFIER_PARAMS) {
    throw new DefinitionError(
      `${what} declares ${fn.length} parameters; it takes (candidate, ctx): destructure what it needs from ctx, ` +
        `e.g. (candidate, { agent, execution, attempt, maxAttempts })`,
    );
  }
}

/** The keys `output` may have. */
export const OUTPUT_KEYS = ["schema", "verify", "verifyAttempts"] as const;

const LIKELY_VERIFY = /^(verif|valid|check|guard|gate)/i;
const LIKELY_ATTEMPTS = /attempt/i;

/** Refuses unknown keys of an agent's `output`, suggesting the key that was probably meant. */
export function checkOutputKeys(output: Record<string, unknown>, where: string): void {
  for (const k of Object.keys(output)) {
    if ((OUTPUT_KEYS as readonly string[]).includes(k)) continue;
    const near = closestKey(k, OUTPUT_KEYS) ?? (LIKELY_ATTEMPTS.test(k) ? "verifyAttempts" : LIKELY_VERIFY.test(k) ? "verify" : undefined);
    throw new DefinitionError(`${where}: output has an ${unknownKeyMessage(k, OUTPUT_KEYS, near)}`, {
      key: `output.${k}`,
    });
  }
}
