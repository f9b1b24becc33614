/**
 * The stored form of an agent's snapshot in the script store (Redis over
 * TCP, Redis Cluster, Upstash): the snapshot without the fields that hold
 * their default value. A commit sends the snapshot every step, and most of
 * the agent machine's persisted snapshot is defaults (the turn config, the
 * verification state, empty `historyValue` and `children`); leaving them out
 * is about two thirds of its bytes.
 *
 *   stored: {"~":1,"value":"waiting-tools","context":{"turnId":"t1","turns":1,"step":1,"pending":{...},"usage":{...},"turnUsage":{...}}}
 *   served: the same with every left-out field back in its place.
 *
 * Invariants:
 * - `expandSnapshot(compactSnapshot(s))` is `s`: the same JSON text (key
 *   order included) for every value `s` (fields JSON leaves out, such as
 *   undefined ones, are left out here too). A field is left out only
 *   where `FORM_1` names it with a default and the value is that default
 *   (the same primitive, an empty array, an empty object); `expandSnapshot`
 *   puts a fresh copy of the default back at the field's place.
 * - Only the agent machine's shape is compacted: at every level `FORM_1`
 *   describes, the snapshot's keys must be exactly the form's keys in the
 *   form's order; any other value (another shape, an older schema, null) is
 *   stored whole, as every snapshot was before this form.
 * - A whole snapshot reads back as it is, so snapshots stored before this
 *   form keep serving (tests/fixtures/event-log-v2). The marker is the first
 *   key, `"~"`: 1 is this form. A snapshot whose own top-level object has a
 *   `"~"` key is stored escaped, `{"~":0,"v":<snapshot>}`, so no value is
 *   mistaken for the compact form. (The agent machine's snapshot never has
 *   such a key; a snapshot of another shape stored before this form with a
 *   top-level `"~"` of 0 or 1 would be read as this form.)
 * - `FORM_1` never changes: stored texts depend on it. Other defaults need a
 *   form 2 (a new marker) next to it.
 * - The Lua scripts never decode the snapshot (store/lua/includes/head.lua):
 *   they store and splice the text as it comes. The script store compacts
 *   where it sends a snapshot (commit, a turn's end, a fork) and expands
 *   where a reply carries one (a claim, `getAgent`, a checkpoint), so the
 *   port serves whole snapshots on every adapter.
 */

type Data = Record<string, unknown>;

/** A level of the form: its keys in order, each a nested level, a default, or NONE (always stored). */
class Level {
  readonly keys: readonly string[];
  /** The fields in the keys' order (compactLevel walks them by position). */
  readonly byIndex: ReadonlyArray<Level | Default>;
  constructor(readonly fields: Readonly<Record<string, Level | Default>>) {
    this.keys = Object.keys(fields);
    this.byIndex = this.keys.map((k) => fields[k]);
  }
}
const NONE = Symbol("no default");
type Default = typeof NONE | null | boolean | number | string | readonly never[] | Readonly<Record<string, never>>;
const level = (fields: Record<string, Level | Default>) => new Level(fields);
const zeroUsage = () => level({ inputTokens: 0, outputTokens: 0, cost: 0, steps: 0 });

/** Form 1: the agent machine's persisted snapshot (machines/agent.ts `initialContext`, schema 2). */
const FORM_1 = level({
  status: "active",
  value: NONE,
  historyValue: {},
  context: level({
    schemaVersion: 2,
    turnId: NONE,
    turns: NONE,
    step: NONE,
    config: level({ maxSteps: 32, completion: "submit_result", mustEndWith: [], verifyMaxAttempts: 5, maxVerifierErrors: 3 }),
    pending: {},
    output: null,
    error: null,
    verification: level({
      maxAttempts: 5, attemptsUsed: 0, lastCandidateHash: null, lastCandidateCallId: null, lastOutcome: null,
      lastAttemptAt: null, systemErrors: 0, retryAt: null, candidate: null, lastRejection: null,
    }),
    usage: zeroUsage(),
    turnUsage: zeroUsage(),
  }),
  children: {},
});

const MARK = "~";

const isRecord = (v: unknown): v is Data => typeof v === "object" && v !== null && !Array.isArray(v);

/** `v` is the default `d`: the same primitive, an empty array or an empty object. */
function isDefault(v: unknown, d: Default): boolean {
  if (d === NONE) return false;
  if (Array.isArray(d)) return Array.isArray(v) && v.length === 0;
  if (typeof d === "object" && d !== null) return isRecord(v) && noOwnKeys(v);
  return v === d;
}

/** No own enumerable key (`Object.keys(v).length === 0` without the array). */
function noOwnKeys(v: Data): boolean {
  for (const k in v) if (Object.hasOwn(v, k)) return false;
  return true;
}

/** A fresh copy of a default. */
const copyOf = (d: Default): unknown => Array.isArray(d) ? [] : typeof d === "object" && d !== null ? {} : d;

/** JSON leaves these out of an object (`JSON.stringify`). */
const unwritten = (x: unknown) => x === undefined || typeof x === "function" || typeof x === "symbol";

/**
 * `v` without its default fields at this level and below; null when `v` is not of the form's shape.
 * The keys compared are those its JSON text has (`persistedOf` gives `output` and `error` as undefined).
 */
function compactLevel(v: unknown, form: Level): Data | null {
  if (!isRecord(v) || "toJSON" in v) return null;
  const out: Data = {};
  let i = 0;
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    const x = v[k];
    if (unwritten(x)) continue;
    const f = form.byIndex[i];
    if (k !== form.keys[i++]) return null;
    if (f instanceof Level) {
      const c = compactLevel(x, f);
      if (c === null) return null;
      if (!noOwnKeys(c)) out[k] = c;
    } else if (!isDefault(x, f)) out[k] = x;
  }
  return i === form.keys.length ? out : null;
}

/** The level back with every left-out field in its place. */
function expandLevel(c: Data, form: Level): Data {
  const out: Data = {};
  for (const k of form.keys) {
    const f = form.fields[k];
    if (f instanceof Level) out[k] = expandLevel(isRecord(c[k]) ? c[k] as Data : {}, f);
    else out[k] = Object.hasOwn(c, k) ? c[k] : copyOf(f);
  }
  return out;
}

/** The stored form of a snapshot (a new object where compacted; the snapshot is not changed). */
export function compactSnapshot(snapshot: unknown): unknown {
  const c = compactLevel(snapshot, FORM_1);
  if (c !== null) return { [MARK]: 1, ...c };
  return isRecord(snapshot) && Object.hasOwn(snapshot, MARK) ? { [MARK]: 0, v: snapshot } : snapshot;
}

/** The snapshot a stored form stands for: form 1 expanded, an escaped one unwrapped, anything else as it is. */
export function expandSnapshot(stored: unknown): unknown {
  if (!isRecord(stored) || !Object.hasOwn(stored, MARK)) return stored;
  if (stored[MARK] === 0) return stored.v;
  if (stored[MARK] !== 1) return stored;
  const { [MARK]: _, ...rest } = stored;
  return expandLevel(rest, FORM_1);
}
