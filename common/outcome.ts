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

/** The error part of an Outcome, as `error()` takes it: either spelling of the flag. */
export interface OutcomeErrorInput {
  type: string;
  message: string;
  retryable?: boolean;
  /** Accepted spelling of `retryable` (the latter wins when both are given). */
  retriable?: boolean;
  metadata?: Record<string, unknown>;
}

/**
 * Marks outcomes made by `ok()` and `error()`, so an in-process tool may
 * return one and have it taken as its outcome, while a plain value that
 * merely looks like `{ ok: true, value }` stays a value. Not enumerable:
 * JSON (records, events, messages) never shows it.
 */
const MADE = Symbol.for("gatehouse.outcome");

/**
 * A successful outcome.
 *
 * @example
 * const lookup = defineTool({
 *   name: "lookup", description: "Find a customer", parameters: z.object({ email: z.string() }),
 *   execute: ({ email }) => ok({ email, plan: "pro" }),
 * });
 */
export function ok(value: unknown): Outcome {
  const o = { ok: true as const, value: value === undefined ? null : value };
  Object.defineProperty(o, MADE, { value: true });
  return o;
}

/**
 * A typed error outcome; `retriable` is taken as `retryable`, which defaults
 * to false.
 *
 * @example
 * execute: ({ html }) => html.includes("<article") ? ok(parse(html))
 *   : error({ type: "invalid_input", message: "no article in the page", retriable: false })
 */
export function error(e: OutcomeErrorInput): Outcome {
  const o: Outcome = {
    ok: false,
    error: {
      type: e.type,
      message: e.message,
      retryable: e.retryable ?? e.retriable ?? false,
      ...(e.metadata !== undefined ? { metadata: e.metadata } : {}),
    },
  };
  Object.defineProperty(o, MADE, { value: true });
  return o;
}

/** True for an outcome made by `ok()` or `error()`. */
export function isMadeOutcome(v: unknown): v is Outcome {
  return !!v && typeof v === "object" && (v as Record<symbol, unknown>)[MADE] === true;
}
