/**
 * Thrown by an output verifier to reject a candidate. Any other exception from
 * a verifier is a system error: retried with backoff, never counted.
 *
 * @example
 * throw new VerificationRejected({ message: "3 tests failed", code: "tests_failed", retryable: true });
 */
export class VerificationRejected extends Error {
  readonly code: string;
  readonly retryable: boolean;
  readonly metadata?: Record<string, unknown>;
  constructor(opts: { message: string; code?: string; retryable?: boolean; metadata?: Record<string, unknown> }) {
    super(opts.message);
    this.name = "VerificationRejected";
    this.code = opts.code ?? "rejected";
    this.retryable = opts.retryable ?? true;
    this.metadata = opts.metadata;
  }
}
