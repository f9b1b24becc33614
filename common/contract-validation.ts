/**
 * What a tool call's log says about its contract check (contracts/check.ts
 * computes it; every resolved tool-call record and every `tool_result` /
 * `tool_result_received` event carries one).
 *
 * - `applied`: the tool declares a contract (`deliverable` or
 *   `resultRequired`) and the outcome was an `ok` value it was checked
 *   against. An error outcome, a tool without a contract, a timeout, and a
 *   result the serving process could not check (no definition) are not.
 * - `passed`: false only when the check turned the value into an error.
 * - `mismatch`: `missing_required_key` | `type_mismatch` |
 *   `nil_required_input`, or null.
 * - `expectedKeys` / `actualKeys`: the keys the contract names and the keys
 *   the value has (of its first item for an array with item keys), as spelt.
 * - `tolerated` (present when a required key was found in another spelling):
 *   each `{ expected, found }` pair.
 */
export type ContractMismatch = "missing_required_key" | "type_mismatch" | "nil_required_input";

export interface ToleratedKey {
  expected: string;
  found: string;
}

export interface ContractValidation {
  applied: boolean;
  passed: boolean;
  mismatch: ContractMismatch | null;
  expectedKeys: string[];
  actualKeys: string[];
  tolerated?: ToleratedKey[];
}

/** The record of a call no contract was checked for. */
export function notApplied(): ContractValidation {
  return { applied: false, passed: true, mismatch: null, expectedKeys: [], actualKeys: [] };
}
