/**
 * Plain JSON values. `jsonCopy` returns a fresh copy of a value as
 * `JSON.parse(JSON.stringify(v))` would, but refuses what JSON would silently
 * change or drop instead of storing something else than what was given:
 * functions, symbols, bigints, non-finite numbers, cycles, class instances
 * without `toJSON`, values nested deeper than HARD_MAX_DEPTH (the copy
 * recurses, bounded by that depth). `undefined` members of objects are dropped and
 * `undefined` array items become null, as in JSON. Errors name the path.
 *
 * `jsonClone` is the plain round trip `JSON.parse(JSON.stringify(v))` for
 * values already known to be JSON (store records, machine definitions); it
 * keeps `undefined` as `undefined`.
 */

import { HARD_MAX_DEPTH } from "./json-bounds.ts";

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export class JsonValueError extends TypeError {
  readonly path: string;
  constructor(path: string, what: string) {
    super(`${path} is not JSON: ${what}`);
    this.name = "JsonValueError";
    this.path = path;
  }
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** A JSON copy of `value`; throws `JsonValueError` naming the first offending path. */
export function jsonCopy(value: unknown, path = "value"): Json {
  return copy(value, path, new Set(), 0);
}

function copy(v: unknown, path: string, seen: Set<object>, depth: number): Json {
  switch (typeof v) {
    case "string":
    case "boolean":
      return v;
    case "number":
      if (!Number.isFinite(v)) throw new JsonValueError(path, `${v} has no JSON form`);
      return Object.is(v, -0) ? 0 : v;
    case "object": {
      if (v === null) return null;
      if (seen.has(v)) throw new JsonValueError(path, "it refers to itself (cycle)");
      const toJSON = (v as { toJSON?: unknown }).toJSON;
      if (depth >= HARD_MAX_DEPTH) throw new JsonValueError(path, `it nests deeper than ${HARD_MAX_DEPTH} levels`);
      if (typeof toJSON === "function") return copy(toJSON.call(v), path, seen, depth + 1);
      seen.add(v);
      try {
        if (Array.isArray(v)) return v.map((x, i) => (x === undefined ? null : copy(x, `${path}[${i}]`, seen, depth + 1)));
        if (!isPlainObject(v)) {
          throw new JsonValueError(path, `a ${v.constructor?.name ?? "non-plain"} object without toJSON()`);
        }
        const out: Record<string, Json> = {};
        for (const [k, x] of Object.entries(v)) {
          if (x !== undefined) out[k] = copy(x, `${path}.${k}`, seen, depth + 1);
        }
        return out;
      } finally {
        seen.delete(v);
      }
    }
    case "undefined":
      throw new JsonValueError(path, "undefined");
    default:
      throw new JsonValueError(path, `a ${typeof v}`);
  }
}

/** `JSON.parse(JSON.stringify(v))`, with `undefined` kept as `undefined`. No checks: for values known to be JSON. */
export function jsonClone<T>(v: T): T {
  return v === undefined ? v : JSON.parse(JSON.stringify(v));
}
