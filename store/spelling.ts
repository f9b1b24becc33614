/**
 * Older spellings in stored records, normalised where a record is read and
 * handed to code: an outcome stored as `error.retriable` comes back as
 * `error.retryable`. Records are never rewritten in place.
 */
import { normalizeOutcome } from "../common/outcome.ts";
import type { ToolCallRecord } from "./types.ts";

export function normalizeRecord(r: ToolCallRecord): ToolCallRecord {
  return r.outcome ? { ...r, outcome: normalizeOutcome(r.outcome) } : r;
}
