/**
 * Canonical JSON: the same value always gives the same bytes.
 *
 * - object keys sorted by UTF-16 code units (as RFC 8785), no whitespace;
 * - numbers in JavaScript's shortest round-trip form, so `1`, `1.0` and
 *   `1e0` are all `1`; `-0` is written `0`;
 * - strings as `JSON.stringify` writes them (lone surrogates escaped), with
 *   no Unicode normalization: a precomposed "é" and "e" + U+0301 are
 *   different strings;
 * - `undefined` object members dropped, `undefined` array items `null`,
 *   `toJSON()` honoured, as in JSON.
 * Values without a JSON form (non-finite numbers, bigints, functions,
 * symbols) are refused with a TypeError, as are values nested deeper than
 * HARD_MAX_DEPTH (the recursion is bounded by it).
 *
 * Used for the candidate hash (verification/hash.ts), verdict ids, feedback
 * metadata, and to tell a repeated tool result from another one
 * (store/redelivery.ts).
 */
import { HARD_MAX_DEPTH } from "./json-bounds.ts";

export function canonicalJson(value: unknown): string {
  return canon(value, 0);
}

function canon(value: unknown, depth: number): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`Cannot canonicalize non-finite number ${value}`);
      return Object.is(value, -0) ? "0" : JSON.stringify(value);
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "object": {
      if (depth >= HARD_MAX_DEPTH) throw new TypeError(`Cannot canonicalize a value nested deeper than ${HARD_MAX_DEPTH} levels`);
      if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canon(v, depth + 1))).join(",")}]`;
      const json = (value as { toJSON?: () => unknown }).toJSON;
      if (typeof json === "function") return canon(json.call(value), depth + 1);
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${canon(obj[k], depth + 1)}`).join(",")}}`;
    }
    default:
      throw new TypeError(`Cannot canonicalize a ${typeof value}`);
  }
}
