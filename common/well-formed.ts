/**
 * Well-formed text: no lone UTF-16 surrogate.
 *
 * `JSON.parse` accepts the escape `"\ud800"` and yields a string holding a
 * lone surrogate; `JSON.stringify` writes it back as that escape, which is
 * valid JSON but not Unicode, and Redis's Lua `cjson.decode` refuses it
 * ("invalid unicode escape code"); a raw lone surrogate becomes U+FFFD on
 * its way to Redis as UTF-8. So a stored record holding one either breaks
 * every script that reads it or reads back differently from what was
 * written.
 *
 * Invariant `well-formed-text` (store/port.ts): every string a store is
 * given reaches its records with each lone surrogate replaced by U+FFFD, on
 * every adapter alike. Client input never gets that far: the HTTP edge
 * refuses it (routes/body.ts, 400 `validation_failed` naming the field);
 * what the replacement covers is text no client sent (a model's text or
 * tool call arguments, a tool's error message).
 *
 * Web APIs only; `String.prototype.isWellFormed` where the runtime has it
 * (not every runtime the package supports does), one regular expression
 * otherwise.
 */

/** A lone surrogate: a high one not followed by a low one, or a low one not preceded by a high one. */
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const LONE_ALL = new RegExp(LONE.source, "g");
/** `String.prototype.isWellFormed` where the runtime has it (native and fast); the regular expression elsewhere. */
const NATIVE = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;
/** Any surrogate: a plain class scan, much cheaper than LONE's look-arounds, which run only when it finds one. */
const ANY_SURROGATE = /[\ud800-\udfff]/;

export const REPLACEMENT = "\ufffd";

/** True when `s` holds a lone surrogate. */
export function hasLoneSurrogate(s: string): boolean {
  // The native check is O(1) on a one-byte string (most JSON texts): no scan at all.
  return NATIVE ? !NATIVE.call(s) : ANY_SURROGATE.test(s) && LONE.test(s);
}

/** `s` with every lone surrogate replaced by U+FFFD (the same string when it has none). */
export function wellFormed(s: string): string {
  return hasLoneSurrogate(s) ? s.replace(LONE_ALL, REPLACEMENT) : s;
}

/** A lone-surrogate escape of `JSON.stringify`, or an escaped backslash (consumed so that `\\ud800` is left alone). */
const ESCAPE = /\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}/g;

/**
 * A JSON text with every lone-surrogate escape replaced by U+FFFD itself and
 * every raw lone surrogate too. For a text of `JSON.stringify(v)` the result
 * is exactly `JSON.stringify(wellFormedValue(v))`. An escaped pair
 * (`\ud83d\ude00`, which `JSON.stringify` never writes but a stored text may
 * hold) is kept. Costs two fixed-string searches when it holds no such escape.
 */
export function wellFormedJson(text: string): string {
  const t = mayHoldSurrogateEscape(text)
    ? text.replace(ESCAPE, (m) => (m.length === 6 && m !== "\\\\" ? REPLACEMENT : m))
    : text;
  return wellFormed(t);
}

function plainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * `v` with every lone surrogate in its strings and object keys replaced by
 * U+FFFD. Walks plain objects and arrays only (anything else is returned as
 * it is) and copies only what changes: a value without a lone surrogate is
 * returned itself. A value too deep or cyclic to walk is returned as it is
 * (the store's own copy then refuses it as before).
 */
export function wellFormedValue<T>(v: T): T {
  try {
    return fix(v) as T;
  } catch (err) {
    if (err instanceof RangeError) return v;
    throw err;
  }
}

function fix(v: unknown): unknown {
  if (typeof v === "string") return wellFormed(v);
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const x = fix(v[i]);
      if (x !== v[i] && out === null) out = v.slice(0, i);
      if (out !== null) out.push(x);
    }
    return out ?? v;
  }
  if (!plainObject(v)) return v;
  let out: Record<string, unknown> | null = null;
  const keys = Object.keys(v);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    const x = fix((v as Record<string, unknown>)[k]);
    const k2 = wellFormed(k);
    if ((x !== (v as Record<string, unknown>)[k] || k2 !== k) && out === null) {
      out = {};
      for (let j = 0; j < i; j++) out[keys[j]] = (v as Record<string, unknown>)[keys[j]];
    }
    // defineProperty: a key `__proto__` stays an own key, as JSON.parse makes it.
    if (out !== null) Object.defineProperty(out, k2, { value: x, enumerable: true, writable: true, configurable: true });
  }
  return out ?? v;
}

/**
 * Where the first lone surrogate of a parsed JSON value is: the path of the
 * string holding it (a key holding one: the path of that key, the key
 * written with U+FFFD), or null when every string and key is well-formed.
 */
export function loneSurrogateAt(v: unknown, path: Array<string | number> = []): Array<string | number> | null {
  if (typeof v === "string") return hasLoneSurrogate(v) ? path : null;
  if (v === null || typeof v !== "object") return null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const at = loneSurrogateAt(v[i], [...path, i]);
      if (at) return at;
    }
    return null;
  }
  for (const [k, x] of Object.entries(v)) {
    if (hasLoneSurrogate(k)) return [...path, wellFormed(k)];
    const at = loneSurrogateAt(x, [...path, k]);
    if (at) return at;
  }
  return null;
}

/** True when a JSON text may hold a lone-surrogate escape (a `\uD800`-`\uDFFF` escape, any case): worth a walk of its value. */
export function mayHoldSurrogateEscape(text: string): boolean {
  // Fixed-string searches (fast, vectorized in the engines) instead of a regular expression; false positives only cost the walk.
  // JSON.stringify escapes only control characters and lone surrogates as `\u`: most texts have none, one search decides.
  const at = text.indexOf("\\u");
  return at >= 0 && (text.includes("\\ud", at) || text.includes("\\uD", at));
}
