/**
 * Thrown by an output verifier to reject a candidate. Any other exception from
 * a verifier is a system error: retried with backoff, never counted.
 *
 * - `message`: what the model is told (the feedback body), required.
 * - `code`: a token naming the reason (default `"rejected"`), shown to the
 *   model as `<verification_rejected code="…">`.
 * - `retryable` (default true): false fails the turn at once, whatever
 *   attempts are left.
 * - `metadata`: JSON details, kept in the verdict's evidence and appended to
 *   the feedback.
 *
 * Bad arguments throw a TypeError, which the gate treats as a system error of
 * the verifier (a bug in it, not a judgment of the candidate).
 *
 * @example
 * throw new VerificationRejected({ message: "3 tests failed", code: "tests_failed", retryable: true });
 */
import { isPlainObject } from "../common/json.ts";
import { SHORT_ID_PATTERN } from "../common/ids.ts";
import { GatehouseError } from "../errors/base.ts";

export const REJECTION_CODE = SHORT_ID_PATTERN;

export interface VerificationRejectedOptions {
  message: string;
  code?: string;
  retryable?: boolean;
  metadata?: Record<string, unknown>;
}

export class VerificationRejected extends GatehouseError {
  readonly retryable: boolean;
  readonly metadata?: Record<string, unknown>;
  constructor(opts: VerificationRejectedOptions) {
    if (!opts || typeof opts !== "object") throw new TypeError("VerificationRejected needs { message, code?, retryable?, metadata? }");
    if (typeof opts.message !== "string") throw new TypeError("VerificationRejected: message must be a string");
    if (opts.code !== undefined && (typeof opts.code !== "string" || !REJECTION_CODE.test(opts.code))) {
      throw new TypeError(`VerificationRejected: code must match ${REJECTION_CODE}, got ${JSON.stringify(opts.code)}`);
    }
    if (opts.retryable !== undefined && typeof opts.retryable !== "boolean") {
      throw new TypeError("VerificationRejected: retryable must be a boolean");
    }
    if (opts.metadata !== undefined && !isPlainObject(opts.metadata)) {
      throw new TypeError("VerificationRejected: metadata must be a plain object");
    }
    super(opts.code ?? "rejected", opts.message);
    this.name = "VerificationRejected";
    this.retryable = opts.retryable ?? true;
    if (opts.metadata !== undefined) this.metadata = opts.metadata;
  }
}
