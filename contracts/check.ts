/**
 * The one contract check of a tool result, wherever it came from: an
 * in-process tool (actors/steps/tool-runner.ts), an external result posted over HTTP
 * (routes/tool-results.ts), or any other producer (a delegated child's
 * result) that has a tool-like description of what it promised.
 *
 *   checkOutcome(tool, outcome, { method? }) -> { outcome, contractValidation }
 *
 * - `tool`: `{ name, role?, deliverable?, resultRequired? }` (a defineTool()
 *   result fits). `role` defaults to `name`; `method` defaults to `name`.
 * - An error outcome, or a tool without `deliverable`/`resultRequired`,
 *   comes back as the same object with `contractValidation.applied: false`.
 * - `resultRequired: true` and an empty ok value (null, "", [], {}):
 *   `error({ type: "invalid_input", retryable: false, metadata })`.
 * - An ok value the deliverable refuses (contracts/deliverable.ts):
 *   `error({ type: "contract_violation", retryable: false, metadata })`.
 * - Metadata: `{ expectedShape, actualShape, expectedKeys, actualKeys,
 *   mismatch, tool, method }`, plus `tolerated: [{ expected, found }]` when
 *   a key was found in another spelling and `detail` (one sentence).
 * - A value that passes comes back as the same object, unchanged (tolerated
 *   spellings are reported, never rewritten).
 *
 * Pure and deterministic (no clock, no I/O): a redelivered result is
 * checked to the same outcome, so first-wins duplicates stay duplicates.
 */
import { type ContractValidation, notApplied } from "../common/contract-validation.ts";
import { error, type Outcome } from "../common/outcome.ts";
import { checkDeliverable, type Deliverable, expectedOf } from "./deliverable.ts";
import { isEmptyValue, isPlainRecord, shapeOf } from "./shape.ts";

/** What the check needs of a tool (or of anything that promised a result). */
export interface ContractedTool {
  name: string;
  role?: string;
  deliverable?: Deliverable;
  resultRequired?: boolean;
}

export interface CheckedOutcome {
  outcome: Outcome;
  contractValidation: ContractValidation;
}

/** True when the tool declares anything to check its results against. */
export function hasContract(tool: ContractedTool): boolean {
  return tool.deliverable !== undefined || tool.resultRequired === true;
}

/**
 * @example
 * const { outcome, contractValidation } = checkOutcome(fetcher, { ok: true, value: { status: 200 } });
 * // outcome.error.type === "contract_violation", contractValidation.mismatch === "missing_required_key"
 */
export function checkOutcome(tool: ContractedTool, outcome: Outcome, opts: { method?: string } = {}): CheckedOutcome {
  if (!outcome.ok || !hasContract(tool)) return { outcome, contractValidation: notApplied() };
  const role = tool.role ?? tool.name;
  const method = opts.method ?? tool.name;
  const value = outcome.value;
  const exp = tool.deliverable ? expectedOf(tool.deliverable) : { shape: "any", keys: [] as string[] };
  const actualKeys = isPlainRecord(value) ? Object.keys(value) : [];
  if (tool.resultRequired && isEmptyValue(value)) {
    const meta = {
      expectedShape: exp.shape, actualShape: shapeOf(value), expectedKeys: exp.keys, actualKeys,
      mismatch: "nil_required_input" as const, tool: role, method, detail: "the result is empty",
    };
    return {
      outcome: error({
        type: "invalid_input",
        message: `Cannot accept the result of tool "${method}": it is empty (${JSON.stringify(value ?? null)}) and the tool declares its result required`,
        retryable: false,
        metadata: meta,
      }),
      contractValidation: { applied: true, passed: false, mismatch: "nil_required_input", expectedKeys: exp.keys, actualKeys },
    };
  }
  if (!tool.deliverable) {
    return { outcome, contractValidation: { applied: true, passed: true, mismatch: null, expectedKeys: exp.keys, actualKeys } };
  }
  const c = checkDeliverable(tool.deliverable, value);
  const tolerated = c.tolerated.length > 0 ? { tolerated: c.tolerated } : {};
  const contractValidation: ContractValidation = {
    applied: true, passed: c.passed, mismatch: c.mismatch, expectedKeys: c.expectedKeys, actualKeys: c.actualKeys, ...tolerated,
  };
  if (c.passed) return { outcome, contractValidation };
  return {
    outcome: error({
      type: "contract_violation",
      message: `Cannot accept the result of tool "${method}": ${c.detail}; keys found: ${c.actualKeys.length > 0 ? c.actualKeys.join(", ") : "none"}`,
      retryable: false,
      metadata: {
        expectedShape: c.expectedShape, actualShape: c.actualShape, expectedKeys: c.expectedKeys, actualKeys: c.actualKeys,
        mismatch: c.mismatch, tool: role, method, ...tolerated, detail: c.detail,
      },
    }),
    contractValidation,
  };
}
