/**
 * The result of a tool or delegation: a value or a typed error.
 *
 * Spelling: the error's flag is `retryable`. `retriable` is accepted on input
 * (tool-result bodies, `ToolError` options) and in records stored before the
 * spelling was fixed; `normalizeOutcome` turns it into `retryable`.
 */
export type Outcome =
  | { ok: true; value: unknown }
  | {
    ok: false;
    error: {
      type: string;
      message: string;
      retryable?: boolean;
      metadata?: Record<string, unknown>;
    };
  };

export type AfterExecution = "continue" | "terminate";

/**
 * The outcome with `error.retriable` renamed to `error.retryable` (the latter
 * wins when both are given). Returns the same object when there is nothing to
 * rename.
 */
type OutcomeError = Extract<Outcome, { ok: false }>["error"];

export function normalizeOutcome<T extends Outcome | undefined>(outcome: T): T {
  if (!outcome || outcome.ok) return outcome;
  const error = outcome.error as OutcomeError & { retriable?: boolean };
  if (!error || typeof error !== "object" || !("retriable" in error)) return outcome;
  const { retriable, ...rest } = error;
  const retryable = rest.retryable ?? retriable;
  return { ...outcome, error: retryable === undefined ? rest : { ...rest, retryable } } as T;
}
