/**
 * Every error class of the package, one import away. Each extends
 * `GatehouseError` (errors/base.ts) and carries a stable `code`.
 *
 * Two classes live beside the table they check against and extend
 * `GatehouseError` from there: `ProblemError` (routes/problem.ts, the problem
 * codes and their statuses) and `VerificationRejected`
 * (verification/rejected.ts, the rejection code pattern of common/ids.ts);
 * errors/ imports nothing.
 * @module
 */
export { GatehouseError } from "./base.ts";
export { DefinitionError, ModelError, PromptError, SnapshotError, ToolError } from "./errors.ts";
export { EvictionPolicyError, StoreInputError, StoreReplyError, StoreUnavailableError } from "./store.ts";
export { EventTrimmedError, HistoryDivergedError } from "./history.ts";
export { VerdictError } from "./verdict.ts";
export type { VerdictErrorCode } from "./verdict.ts";
export { ReplayBundleError } from "./replay.ts";
export { ConfigError, STARTUP_EXIT_CODES, StartupError } from "./startup.ts";
export type { StartupFailureKind } from "./startup.ts";
