/**
 * What a delivery learns when its call is already resolved. Every adapter
 * answers it the same way, from the stored record, and changes nothing:
 *
 * - resolved by the watchdog: `already_resolved`, `resolvedBy: "timeout"`,
 *   whatever the value (the result came too late and was dropped);
 * - resolved by a result with the same outcome and `afterExecution`, compared
 *   as canonical JSON (key order, number spelling and the `retriable`
 *   spelling do not matter): `duplicate` (a retry of the delivery that won);
 * - resolved by a result with another value: `already_resolved`,
 *   `resolvedBy: "result"` (this value was dropped).
 *
 * The comparison runs outside the Lua scripts (which return the stored
 * record), because Lua's JSON cannot put keys in a canonical order; it
 * decides only the answer, never a write.
 */
import { canonicalJson } from "../common/canonical-json.ts";
import { normalizeOutcome } from "../common/outcome.ts";
import type { DeliverToolResultRequest, DeliverToolResultResult } from "./port.ts";
import { normalizeRecord } from "./spelling.ts";
import type { ToolCallRecord } from "./types.ts";

type Delivery = Pick<DeliverToolResultRequest, "outcome" | "afterExecution">;

const canonical = (d: Delivery): string | null => {
  try {
    return canonicalJson({ outcome: normalizeOutcome(d.outcome), afterExecution: d.afterExecution });
  } catch {
    return null;
  }
};

/** True when `req` carries the result the record was resolved with. */
export function sameResult(record: ToolCallRecord, req: Delivery): boolean {
  if (record.outcome === undefined || record.afterExecution === undefined) return false;
  const a = canonical({ outcome: record.outcome, afterExecution: record.afterExecution });
  return a !== null && a === canonical(req);
}

/** The answer to a delivery for the resolved call `stored` (the record handed back in the current spelling). */
export function answerResolved(stored: ToolCallRecord, req: Delivery): DeliverToolResultResult {
  const record = normalizeRecord(stored);
  if (record.source === "watchdog") return { status: "already_resolved", record, resolvedBy: "timeout" };
  return sameResult(record, req) ? { status: "duplicate", record } : { status: "already_resolved", record, resolvedBy: "result" };
}
