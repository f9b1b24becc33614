/**
 * JSON text of values that share parts, each shared part encoded once.
 *
 * One step's writes hold the same value several times: a tool call's
 * arguments are in its record, its `tool_call` event, the `transition`
 * event's MODEL_STEP, the assistant message and the snapshot's `pending`;
 * a result is in its resolution, its `tool_result` event and the
 * `transition` event's TOOL_RESULT. The host hands the store the same
 * object in each place, so a memo keyed by object identity encodes it once.
 *
 * Invariants:
 * - `encode(v, shape)` is exactly `JSON.stringify(v)`, byte for byte, for
 *   every value `v` and every shape: same text, same key order, same
 *   `undefined` as result. Only the way there differs.
 * - A value at a `SHARED` leaf of the shape (an object, or a string of at
 *   least `SPLICE_MIN` characters) is stringified at most once per
 *   `JsonOnce`; each later meeting splices the stored text. A shared text
 *   shorter than `SPLICE_MIN` is not spliced: the engine writes it again
 *   with its container, which is cheaper for small values.
 * - A memo lives for one synchronous encoding (one commit's arguments): the
 *   values it has seen must not change while it lives. It holds nothing
 *   after that.
 *
 * Only the levels the shape names are walked here, and only when a long
 * shared text lies below; everything else goes to the engine's
 * `JSON.stringify` in one call. A node that `JSON.stringify`
 * would treat specially (`toJSON`, a boxed primitive, a class instance) is
 * handed to it whole, so the equality holds for them too (a `toJSON` is
 * then called with the empty key, not its property name; no value the
 * runtime stores reads that argument).
 */

/** The leaf mark of a shape: the value there is encoded once per memo. */
export const SHARED = 1 as const;

/**
 * Where shared values sit: object shapes name keys (`"*"`: every key of a
 * map), a one-element array shape applies to every item, `SHARED` marks a
 * shared value. Anything the shape does not name is encoded in one call.
 */
export type Shape = typeof SHARED | { readonly [key: string]: Shape } | readonly [Shape];

const json = JSON.stringify;

function plain(v: object): boolean {
  if (typeof (v as { toJSON?: unknown }).toJSON === "function") return false;
  if (Array.isArray(v)) return true;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * `budget` less a lower bound of the length of `v`'s JSON text, stopping as
 * soon as it is spent (<= 0). Strings count their characters (escapes only
 * add), keys their characters and punctuation, other values one character.
 * It decides whether a shared value is worth splicing, never what is
 * written, so a low guess costs speed only.
 */
function lowerBound(v: unknown, budget: number): number {
  if (typeof v === "string") return budget - v.length - 2;
  if (v === null || typeof v !== "object") return budget - 1;
  // toJSON, a class instance: its text cannot be guessed; taken as long.
  if (!plain(v)) return 0;
  budget -= 2;
  if (Array.isArray(v)) {
    for (const item of v) {
      budget = lowerBound(item, budget - 1);
      if (budget <= 0) return budget;
    }
    return budget;
  }
  for (const key in v) {
    budget = lowerBound((v as Record<string, unknown>)[key], budget - key.length - 4);
    if (budget <= 0) return budget;
  }
  return budget;
}

/** What JSON.stringify drops from an object and writes as null in an array. */
function skipped(v: unknown): boolean {
  return v === undefined || typeof v === "function" || typeof v === "symbol";
}

/**
 * Shared texts shorter than this are left to the engine's stringify of their
 * container: one native call over a small object costs less than walking it
 * to splice a short text (bench/commit-args.ts).
 */
export const SPLICE_MIN = 256;

export class JsonOnce {
  readonly #texts = new Map<unknown, string | undefined>();
  /**
   * Shared objects measured shorter than SPLICE_MIN: a commit meets the same object in several places (a call's
   * `args` in its record, its event, the transition, the message, the snapshot), measured once.
   */
  readonly #short = new Set<object>();

  /** Values stringified so far (each once). */
  get encoded(): number {
    return this.#texts.size;
  }

  /** `JSON.stringify(v)`, computed once per object (or long string) for the life of this memo. */
  text(v: unknown): string | undefined {
    if (v === null || (typeof v !== "object" && (typeof v !== "string" || v.length < SPLICE_MIN))) return json(v);
    if (this.#texts.has(v)) return this.#texts.get(v);
    const t = json(v);
    this.#texts.set(v, t);
    return t;
  }

  /** `JSON.stringify(v)`, with the values at the shape's SHARED leaves taken from this memo. */
  encode(v: unknown, shape: Shape): string | undefined {
    if (shape === SHARED) return this.text(v);
    return this.#worth(v, shape) ? this.#walk(v as object, shape) : json(v);
  }

  /** Does `v` hold, where the shape says, a shared value whose text is long enough to splice? */
  #worth(v: unknown, shape: Shape): boolean {
    if (shape === SHARED) {
      if (typeof v === "string") return v.length >= SPLICE_MIN;
      if (v === null || typeof v !== "object") return false;
      // Met before in this memo: encoded (its text's length decides) or measured short.
      if (this.#texts.has(v)) return (this.#texts.get(v)?.length ?? 0) >= SPLICE_MIN;
      if (this.#short.has(v)) return false;
      // Measured without encoding it (lowerBound).
      if (lowerBound(v, SPLICE_MIN) <= 0) return true;
      this.#short.add(v);
      return false;
    }
    if (v === null || typeof v !== "object" || !plain(v)) return false;
    if (Array.isArray(v)) {
      if (!Array.isArray(shape)) return false;
      const inner = (shape as readonly [Shape])[0];
      for (const item of v) if (this.#worth(item, inner)) return true;
      return false;
    }
    if (Array.isArray(shape)) return false;
    const named = shape as { readonly [key: string]: Shape };
    const every = named["*"];
    const o = v as Record<string, unknown>;
    if (every !== undefined) {
      for (const key of Object.keys(o)) if (this.#worth(o[key], Object.hasOwn(named, key) ? named[key] : every)) return true;
      return false;
    }
    for (const key in named) if (Object.hasOwn(o, key) && this.#worth(o[key], named[key])) return true;
    return false;
  }

  /** The text of a plain object or array that `#worth` accepted, one level at a time. */
  #sub(value: unknown, s: Shape | undefined): string | undefined {
    if (s === undefined) return json(value);
    if (s === SHARED) return this.text(value);
    return this.#worth(value, s) ? this.#walk(value as object, s) : json(value);
  }

  #walk(v: object, shape: Shape): string {
    if (Array.isArray(v)) {
      const inner = (shape as readonly [Shape])[0];
      let out = "[";
      for (let i = 0; i < v.length; i++) {
        const item = v[i];
        const t = skipped(item) ? undefined : this.#sub(item, inner);
        out += (i === 0 ? "" : ",") + (t === undefined ? "null" : t);
      }
      return out + "]";
    }
    const named = shape as { readonly [key: string]: Shape };
    const every = named["*"];
    let out = "{";
    let first = true;
    for (const key of Object.keys(v)) {
      const value = (v as Record<string, unknown>)[key];
      if (skipped(value)) continue;
      const t = this.#sub(value, Object.hasOwn(named, key) ? named[key] : every);
      if (t === undefined) continue;
      out += (first ? "" : ",") + json(key) + ":" + t;
      first = false;
    }
    return out + "}";
  }
}
