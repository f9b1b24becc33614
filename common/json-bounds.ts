/**
 * Bounds on JSON values that come from outside: nesting depth, string length
 * and the number of items of one array (or members of one object).
 *
 * Invariant: no value that exceeds the limits enters a turn, and no code path
 * recurses on such a value. Values enter at four places, each checked here:
 * HTTP bodies (`scanJsonText`, on the text, before `JSON.parse`), model
 * responses and in-process tool results (`checkJsonValue`, in actors/steps/model-step.ts and actors/steps/tool-runner.ts)
 * and verifier results (`jsonCopy` of common/json.ts, bounded by
 * `HARD_MAX_DEPTH`). Both checks are iterative: a check never recurses, so it
 * cannot itself overflow the stack, whatever the input.
 *
 * Depth counts containers: `1` and `"x"` have depth 0, `[]` and `{}` depth 1,
 * `[[1]]` depth 2.
 */

export interface JsonLimits {
  /** Deepest nesting of arrays and objects (default 64, at most HARD_MAX_DEPTH). */
  maxDepth: number;
  /** Longest string, keys included, in UTF-16 code units (default 262 144). */
  maxStringLength: number;
  /** Most items of one array or members of one object (default 10 000). */
  maxArrayLength: number;
}

export const DEFAULT_JSON_LIMITS: Readonly<JsonLimits> = Object.freeze({
  maxDepth: 64,
  maxStringLength: 262_144,
  maxArrayLength: 10_000,
});

/**
 * The deepest nesting any code path accepts, whatever the configuration: the
 * recursive helpers that remain (JSON.stringify inside the runtime, XState's
 * context persistence, canonical JSON) are safe far beyond it.
 */
export const HARD_MAX_DEPTH = 256;

export type JsonLimitKind = "depth" | "string_length" | "array_length";

export interface JsonLimitViolation {
  limit: JsonLimitKind;
  max: number;
  /** Where the violation was found: a character offset (text) or a path (value). */
  at: string;
}

/** Merges partial limits over the defaults; throws RangeError for values out of range. */
export function jsonLimits(partial: Partial<JsonLimits> = {}): JsonLimits {
  const out = { ...DEFAULT_JSON_LIMITS, ...partial };
  const int = (v: number, lo: number, hi: number, name: string) => {
    if (!Number.isSafeInteger(v) || v < lo || v > hi) throw new RangeError(`${name} must be an integer from ${lo} to ${hi}, got ${v}`);
  };
  int(out.maxDepth, 1, HARD_MAX_DEPTH, "maxDepth");
  int(out.maxStringLength, 1, 2 ** 30, "maxStringLength");
  int(out.maxArrayLength, 1, 2 ** 30, "maxArrayLength");
  return out;
}

/** The message of a violation, for problem details and error outcomes. */
export function describeViolation(v: JsonLimitViolation): string {
  const what = v.limit === "depth" ? "nests deeper than" : v.limit === "string_length"
    ? "holds a string longer than"
    : "holds an array or object with more items than";
  const unit = v.limit === "depth" ? "levels" : v.limit === "string_length" ? "characters" : "items";
  return `The JSON value ${what} ${v.max} ${unit} (at ${v.at})`;
}

/**
 * Scans JSON text once, left to right, and reports the first limit it
 * exceeds, or null. Linear time, constant stack, memory bounded by
 * `maxDepth`. It does not validate the syntax (JSON.parse does, afterwards);
 * on malformed text its answer only concerns the brackets and strings it saw.
 */
export function scanJsonText(text: string, limits: JsonLimits): JsonLimitViolation | null {
  // counts[d]: items seen so far in the container at depth d (an item starts at its first character).
  const counts: number[] = [];
  const open: boolean[] = []; // open[d]: a value may start (after "[" or ",")
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      // A string: count its UTF-16 units as decoded (an escape is one unit, \uXXXX one unit).
      let len = 0;
      i++;
      while (i < n) {
        const c = text.charCodeAt(i);
        if (c === 0x22) break;
        if (c === 0x5c /* \ */) i += text.charCodeAt(i + 1) === 0x75 /* u */ ? 6 : 2;
        else i++;
        if (++len > limits.maxStringLength) return { limit: "string_length", max: limits.maxStringLength, at: `offset ${i}` };
      }
      if (depth > 0 && open[depth]) countItem();
      if (depth > 0 && counts[depth] > limits.maxArrayLength) {
        return { limit: "array_length", max: limits.maxArrayLength, at: `offset ${i}` };
      }
      continue;
    }
    if (ch === 0x5b /* [ */ || ch === 0x7b /* { */) {
      if (depth > 0 && open[depth]) countItem();
      if (depth > 0 && counts[depth] > limits.maxArrayLength) {
        return { limit: "array_length", max: limits.maxArrayLength, at: `offset ${i}` };
      }
      depth++;
      if (depth > limits.maxDepth) return { limit: "depth", max: limits.maxDepth, at: `offset ${i}` };
      counts[depth] = 0;
      open[depth] = true;
      continue;
    }
    if (ch === 0x5d /* ] */ || ch === 0x7d /* } */) {
      if (depth > 0) depth--;
      continue;
    }
    if (ch === 0x2c /* , */) {
      if (depth > 0) open[depth] = true;
      continue;
    }
    if (ch === 0x3a /* : */) {
      // An object member's value follows; the member was counted at its key.
      if (depth > 0) open[depth] = false;
      continue;
    }
    if (ch === 0x20 || ch === 0x0a || ch === 0x0d || ch === 0x09) continue;
    // The first character of a literal (number, true, false, null).
    if (depth > 0 && open[depth]) {
      countItem();
      if (counts[depth] > limits.maxArrayLength) return { limit: "array_length", max: limits.maxArrayLength, at: `offset ${i}` };
    }
  }
  return null;

  function countItem() {
    counts[depth]++;
    open[depth] = false;
  }
}

/**
 * Checks a value that is already in memory (a tool's return value, a model's
 * tool-call arguments) against the limits, iteratively. Cycles count as too
 * deep. Values JSON cannot hold (functions, symbols) are not judged here:
 * `JSON.stringify` drops them as usual.
 */
export function checkJsonValue(value: unknown, limits: JsonLimits): JsonLimitViolation | null {
  const stack: Array<{ v: unknown; depth: number; path: string }> = [{ v: value, depth: 0, path: "$" }];
  while (stack.length > 0) {
    const { v, depth, path } = stack.pop()!;
    if (typeof v === "string") {
      if (v.length > limits.maxStringLength) return { limit: "string_length", max: limits.maxStringLength, at: path };
      continue;
    }
    if (v === null || typeof v !== "object") continue;
    const toJSON = (v as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === "function") {
      // Dates and the like: judged by what JSON would write (one call, no recursion here).
      stack.push({ v: toJSON.call(v), depth, path });
      continue;
    }
    const d = depth + 1;
    if (d > limits.maxDepth) return { limit: "depth", max: limits.maxDepth, at: path };
    if (Array.isArray(v)) {
      if (v.length > limits.maxArrayLength) return { limit: "array_length", max: limits.maxArrayLength, at: path };
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], depth: d, path: `${path}[${i}]` });
    } else {
      const keys = Object.keys(v);
      if (keys.length > limits.maxArrayLength) return { limit: "array_length", max: limits.maxArrayLength, at: path };
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i];
        if (k.length > limits.maxStringLength) return { limit: "string_length", max: limits.maxStringLength, at: path };
        stack.push({ v: (v as Record<string, unknown>)[k], depth: d, path: `${path}.${k.length > 40 ? k.slice(0, 40) + "…" : k}` });
      }
    }
  }
  return null;
}

/** Only the hard depth bound: for values already admitted, on their way into text. */
const DEPTH_ONLY: JsonLimits = Object.freeze({ maxDepth: HARD_MAX_DEPTH, maxStringLength: 2 ** 30, maxArrayLength: 2 ** 30 });

/** Error thrown where a value over the limits must not go further. */
export class JsonLimitError extends RangeError {
  readonly code = "json_limit_exceeded";
  readonly violation: JsonLimitViolation;
  constructor(violation: JsonLimitViolation) {
    super(describeViolation(violation));
    this.name = "JsonLimitError";
    this.violation = violation;
  }
}

/** `JSON.stringify(value)` after a bounded check; throws JsonLimitError instead of overflowing the stack. */
export function boundedStringify(value: unknown, limits: JsonLimits = DEPTH_ONLY): string {
  const v = checkJsonValue(value, limits);
  if (v) throw new JsonLimitError(v);
  return JSON.stringify(value);
}

/**
 * JSON text of a value for a conversation: `boundedStringify`, or a fixed
 * error text when the value nests too deep to be written safely. Never
 * throws on data, so code that builds messages cannot be wedged by a value.
 */
export function safeJsonText(v: unknown): string {
  try {
    return boundedStringify(v) ?? "null";
  } catch (err) {
    if (!(err instanceof JsonLimitError)) throw err;
    return JSON.stringify({ error: { type: "json_limit_exceeded", message: err.message } });
  }
}
