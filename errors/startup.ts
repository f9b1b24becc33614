/**
 * The errors of configuration and start (entry/config.ts, entry/startup.ts):
 * `ConfigError`, `StartupError` and the exit codes a failed start ends with.
 * @module
 */
import { GatehouseError } from "./base.ts";

/** A bad configuration value: one line naming the variable. */
export class ConfigError extends GatehouseError {
  declare readonly code: "invalid_config";
  override readonly name = "ConfigError";
  constructor(message: string, readonly variable?: string) {
    super("invalid_config", message);
  }
}

/** Exit codes of a failed start (documented in docs/operations.md). */
export const STARTUP_EXIT_CODES = {
  /** Anything not listed below. */
  unexpected: 1,
  /** A bad environment variable, command-line argument or option. */
  config: 2,
  /** The agents module cannot be loaded, exports no agent, or a definition is refused. */
  agents: 3,
  /** The store cannot be reached in time, or refuses to be used (eviction policy). */
  store: 4,
  /** The server cannot listen: port in use, no permission, address not available. */
  listen: 5,
} as const;

export type StartupFailureKind = keyof typeof STARTUP_EXIT_CODES;

/** A failed start, already described in one line. */
export class StartupError extends GatehouseError {
  declare readonly code: "startup_failed";
  override readonly name = "StartupError";
  readonly exitCode: number;
  constructor(readonly kind: StartupFailureKind, message: string, options?: { cause?: unknown }) {
    super("startup_failed", message, options);
    this.exitCode = STARTUP_EXIT_CODES[kind];
  }
}
