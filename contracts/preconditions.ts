/**
 * Preconditions of contracted tools: a required parameter refuses null,
 * undefined, "", [] and {} with the error outcome `invalid_input` (metadata
 * `mismatch: "nil_required_input"`) before `execute` runs, so a parser
 * handed nothing fails loudly instead of answering an empty success.
 *
 * A parameter is required when its zod schema refuses `undefined` (not
 * `.optional()`, no `.default()`) and the tool neither defaults nor fixes
 * it. The check reads the model's raw arguments, before defaults and before
 * the schema (so `null` is `invalid_input`, not a schema error). It applies
 * to tools with `preconditions: true`, which is the default for a tool that
 * declares `deliverable` or `resultRequired`; other tools behave as they
 * always did (their schema alone decides).
 */
import { error, type Outcome } from "../common/outcome.ts";
import { isEmptyValue, isPlainRecord, shapeOf } from "./shape.ts";

/** What preconditions need to know of a tool (a defineTool() result fits). */
export interface PreconditionTool {
  name: string;
  role?: string;
  parameters?: unknown;
  defaults?: Record<string, unknown>;
  fixed?: Record<string, unknown>;
  preconditions?: boolean;
  deliverable?: unknown;
  resultRequired?: boolean;
}

type ShapeHolder = { _zod?: { def?: { type?: string; shape?: Record<string, { safeParse?(v: unknown): { success: boolean } }> } } };

/** Whether the tool's preconditions are checked (see the module header). */
export function preconditionsApply(tool: PreconditionTool): boolean {
  return tool.preconditions ?? (tool.deliverable !== undefined || tool.resultRequired === true);
}

/** The required parameters of a tool, in schema order. */
export function requiredParams(tool: PreconditionTool): string[] {
  const def = (tool.parameters as ShapeHolder | undefined)?._zod?.def;
  if (def?.type !== "object" || !def.shape) return [];
  return Object.entries(def.shape)
    .filter(([k, s]) => !Object.hasOwn(tool.defaults ?? {}, k) && !Object.hasOwn(tool.fixed ?? {}, k))
    .filter(([, s]) => typeof s?.safeParse !== "function" || !s.safeParse(undefined).success)
    .map(([k]) => k);
}

/**
 * The `invalid_input` outcome for arguments that leave a required parameter
 * empty, or null when they are fine (or the tool does not check).
 */
export function checkPreconditions(tool: PreconditionTool, args: unknown): Outcome | null {
  if (!preconditionsApply(tool)) return null;
  const required = requiredParams(tool);
  if (required.length === 0) return null;
  const given = isPlainRecord(args) ? args : {};
  const empty = required.filter((k) => isEmptyValue(given[k]));
  if (empty.length === 0) return null;
  const found = Object.fromEntries(empty.map((k) => [k, Object.hasOwn(given, k) ? shapeOf(given[k]) === "null" ? "null" : JSON.stringify(given[k]) : "absent"]));
  return error({
    type: "invalid_input",
    message: `Cannot run tool "${tool.name}": required parameter${empty.length > 1 ? "s" : ""} ${empty.map((k) => `"${k}"`).join(", ")} ${empty.length > 1 ? "are" : "is"} empty (${empty.map((k) => `${k}: ${found[k]}`).join(", ")})`,
    retryable: true,
    metadata: { mismatch: "nil_required_input", parameters: empty, given: found, tool: tool.role ?? tool.name, method: tool.name },
  });
}
