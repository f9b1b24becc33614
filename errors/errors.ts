/**
 * The error classes of definitions, tools, models and snapshots. Every one
 * extends `GatehouseError` (errors/base.ts) and carries a stable `code`. Of these
 * only `SnapshotError` reaches HTTP: the app's error handler in routes/app.ts
 * (and the agent view, routes/agent-view.ts) turn it into problem+json
 * `snapshot_unrestorable`; the codes and statuses of the HTTP surface are
 * listed in routes/problem.ts. `DefinitionError` is thrown at startup,
 * `ToolError` and `ModelError` become outcomes and events of a turn.
 */
import { GatehouseError } from "./base.ts";

/**
 * A definition (tool, agent, guardian, gatehouse options) is invalid. Thrown
 * at definition time. `key` names the option at fault as a path, when there
 * is one: `parameters`, `defaults.limit`, `output.schema`, `concurrency`.
 */
export class DefinitionError extends GatehouseError {
  declare readonly code: "invalid_definition";
  readonly key?: string;
  constructor(message: string, options: { key?: string } = {}) {
    super("invalid_definition", message);
    this.name = "DefinitionError";
    if (options.key !== undefined) this.key = options.key;
  }
}

/**
 * A tool failed in a way the model should see as a typed error outcome.
 * `retriable` is accepted as another spelling of `retryable` (the latter wins).
 * `code` is always `tool_error`; `type` is the tool's own error type.
 */
export class ToolError extends GatehouseError {
  declare readonly code: "tool_error";
  readonly type: string;
  readonly retryable: boolean;
  readonly metadata?: Record<string, unknown>;
  constructor(
    opts: { type: string; message: string; retryable?: boolean; retriable?: boolean; metadata?: Record<string, unknown> },
  ) {
    super("tool_error", opts.message);
    this.name = "ToolError";
    this.type = opts.type;
    this.retryable = opts.retryable ?? opts.retriable ?? false;
    this.metadata = opts.metadata;
  }
}

/** A model call failed; `retryable` says whether the host may try again within its budget. */
export class ModelError extends GatehouseError {
  declare readonly code: "model_error";
  readonly retryable: boolean;
  constructor(message: string, opts: { retryable?: boolean; cause?: unknown } = {}) {
    super("model_error", message, { cause: opts.cause });
    this.name = "ModelError";
    this.retryable = opts.retryable ?? true;
  }
}

/** A persisted snapshot cannot be restored (unknown schema version, wrong machine). */
export class SnapshotError extends GatehouseError {
  declare readonly code: "snapshot_unrestorable";
  constructor(message: string) {
    super("snapshot_unrestorable", message);
    this.name = "SnapshotError";
  }
}

/** A conversation the AI SDK adapter cannot send (models/ai-sdk/; the adapter makes it a non-retryable ModelError). */
export class PromptError extends GatehouseError {
  declare readonly code: "invalid_prompt";
  constructor(message?: string) {
    super("invalid_prompt", message ?? "");
    this.name = "PromptError";
  }
}
