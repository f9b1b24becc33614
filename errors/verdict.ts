/**
 * The one error of verdict records. `code` says what was wrong, `field` names
 * the offending field of the record (dotted path), so a caller can show it or
 * map it to an HTTP problem.
 *
 * - `invalid_verdict`: the record breaks the schema (missing field, wrong
 *   type, bad status, unsupported schema version).
 * - `unknown_guardian`: `guardianCode` is not in the guardian registry.
 * - `unknown_assignment`: `assignmentId` names no assignment, or one of
 *   another guardian or agent.
 * - `unknown_task`: `taskId` is not the active turn of the agent.
 */
import { GatehouseError } from "./base.ts";

export type VerdictErrorCode = "invalid_verdict" | "unknown_guardian" | "unknown_assignment" | "unknown_task";

export class VerdictError extends GatehouseError {
  declare readonly code: VerdictErrorCode;
  readonly field: string;
  constructor(code: VerdictErrorCode, field: string, message: string) {
    super(code, message);
    this.name = "VerdictError";
    this.field = field;
  }
}
