/**
 * What a delivery learns when its call is already resolved. Every adapter
 * answers it the same way, from the stored record, and changes nothing:
 *
 * - resolved by the watchdog: `already_resolved`, `resolvedBy: "timeout"`,
 *   whatever the value (the result came too late and was dropped);
 * - resolved by a result with the same outcome and `afterExecution`, compared
 *   as canonical JSON (key order and number spelling do not matter):
 *   `duplicate` (a retry of the delivery that won);
 * - resolved by a result with another value: `already_resolved`,
 *   `resolvedBy: "result"` (this value was dropped).
 *
 * The comparison runs outside the Lua scripts (which return the stored
 * record), because Lua's JSON cannot put keys in a canonical order; it
 * decides only the answer, never a write.
 */
import { canonicalJson } from "../verification/hash.ts";
import type { DeliverToolResultRequest, DeliverToolResultResult } from "./port.ts";
import type { ToolCallRecord } from "./types.ts";

type Delivery = Pick<DeliverToolResultRequest, "outcome" | "afterExecution">;

const canonical = (d: Delivery): string | null => {
  try {
    return canonicalJson({ outcome: d.outcome, afterExecution: d.afterExecution });
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

/** The answer to a delivery for the resolved call `record`. */
export function answerResolved(record: ToolCallRecord, req: Delivery): DeliverToolResultResult {
  if (record.source === "watchdog") return { status: "already_resolved", record, resolvedBy: "timeout" };
  return sameResult(record, req) ? { status: "duplicate", record } : { status: "already_resolved", record, resolvedBy: "result" };
}
