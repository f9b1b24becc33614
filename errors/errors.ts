/**
 * The error classes gatehouse throws. Most carry a stable `code`. Of these
 * only `SnapshotError` reaches HTTP: the app's error handler in routes/app.ts
 * (and the agent view, routes/agent-view.ts) turn it into problem+json
 * `snapshot_unrestorable`; the codes and statuses of the HTTP surface are
 * listed in routes/problem.ts. `DefinitionError` is thrown at startup,
 * `ToolError` and `ModelError` become outcomes and events of a turn.
 */

/**
 * A definition (tool, agent, guardian, gatehouse options) is invalid. Thrown
 * at definition time. `key` names the option at fault as a path, when there
 * is one: `parameters`, `defaults.limit`, `output.schema`, `concurrency`.
 */
export class DefinitionError extends Error {
  readonly code = "invalid_definition";
  readonly key?: string;
  constructor(message: string, options: { key?: string } = {}) {
    super(message);
    this.name = "DefinitionError";
    if (options.key !== undefined) this.key = options.key;
  }
}

/**
 * A tool failed in a way the model should see as a typed error outcome.
 * `retriable` is accepted as another spelling of `retryable` (the latter wins).
 */
export class ToolError extends Error {
  readonly type: string;
  readonly retryable: boolean;
  readonly metadata?: Record<string, unknown>;
  constructor(
    opts: { type: string; message: string; retryable?: boolean; retriable?: boolean; metadata?: Record<string, unknown> },
  ) {
    super(opts.message);
    this.name = "ToolError";
    this.type = opts.type;
    this.retryable = opts.retryable ?? opts.retriable ?? false;
    this.metadata = opts.metadata;
  }
}

/** A model call failed; `retryable` says whether the host may try again within its budget. */
export class ModelError extends Error {
  readonly code = "model_error";
  readonly retryable: boolean;
  constructor(message: string, opts: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.name = "ModelError";
    this.retryable = opts.retryable ?? true;
  }
}

/** A persisted snapshot cannot be restored (unknown schema version, wrong machine). */
export class SnapshotError extends Error {
  readonly code = "snapshot_unrestorable";
  constructor(message: string) {
    super(message);
    this.name = "SnapshotError";
  }
}
