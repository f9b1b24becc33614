/**
 * The stored form of an agent's event log and the served form
 * (machines/event-log.ts, "Stored form and served form"): within one commit, a
 * payload a `transition` carries is stored once, in the transition, and the
 * sibling events that repeat it name the transition by `ref` (its id minus
 * their own) instead.
 *
 * | event              | fields stored in the transition only                | read from                          |
 * |--------------------|-----------------------------------------------------|------------------------------------|
 * | `tool_call`        | `name`, `args`, `external`, `deadline` (no deadline: the completion tool's `builtin` call) | the `MODEL_STEP` call of its `toolCallId` |
 * | `tool_result`      | `ok`, `outcome`, `afterExecution`                   | the `TOOL_RESULT` of its `toolCallId` |
 * | `step` planning    | `text`                                              | the next `MODEL_STEP`'s `text`     |
 * | `step` executing   | `toolCallIds`                                       | the next `MODEL_STEP`'s call ids   |
 * | `step` completed   | `llmUsage`, `llmResponseCost`, `toolCallIds`        | the previous `MODEL_STEP`'s `usage`, `cost`, call ids |
 * | `chunk`            | `text` (kept: `from`, `to`)                         | the next `MODEL_STEP`'s `text.slice(from, to)` |
 *
 * Invariants:
 * - `compactEvents` leaves fields out only when the transition gives the
 *   very values back (the same object, string, number or boolean; ids equal
 *   one by one; the one `take` of the form serves both directions) and the
 *   fields follow their anchor field directly; `expandEvents` puts them back
 *   after the anchor, so the expanded data is the written data, key order
 *   included.
 * - Only catalogued types with a numeric `ref` are expanded: a log written
 *   before (no `ref` anywhere) passes unchanged (upgrade on read).
 * - A compact event whose transition the store does not hold is never
 *   served (`servedPage`: it counts as trimmed). It does not happen: a
 *   commit's events are appended together and retention cuts the log only
 *   after a whole commit; a page and the transitions it names are read in
 *   one store read, so no trim falls between them.
 * - A compact event is never longer than the event it stands for (counted
 *   without serializing: a lower bound of the moved fields' JSON against the
 *   exact length of `ref`, `from`, `to`), so a page cut by a budget of stored
 *   bytes holds every event that fits the same budget served.
 * - Cheap on the write path: one pass over a commit's events, identity
 *   comparisons only.
 */
import type { NewEvent, StoredEvent } from "./events.ts";

type Data = Record<string, unknown>;
type Call = { id: string; name: string; args: unknown; external: boolean; deadline: number };
type ModelStep = { type: "MODEL_STEP"; text: string | null; toolCalls: Call[]; usage: unknown; cost: number };
type ToolResult = { type: "TOOL_RESULT"; toolCallId: string; outcome: { ok: boolean }; afterExecution: string };

/**
 * Where the moved fields sit in the full data (right after `anchor`), where
 * the transition is (`at`: the next MODEL_STEP, the previous one, or the
 * TOOL_RESULT of the event's call) and how the transition gives their
 * values back (`take`, from the event's data, compact or whole; undefined:
 * it does not hold them). Compacting and expanding both use `take`, so a
 * field is left out only when `take` gives exactly it back.
 */
interface Form {
  anchor: string;
  moved: readonly string[];
  at: "next-step" | "previous-step" | "result";
  take(t: NewEvent | undefined, d: Data): Data | undefined;
}

const callOf = (t: NewEvent | undefined, d: Data) => modelStepOf(t)?.toolCalls.find((c) => c.id === d.toolCallId);
const idsOf = (t: NewEvent | undefined) => modelStepOf(t)?.toolCalls.map((c) => c.id);

const FORMS = {
  tool_call: {
    anchor: "toolCallId", moved: ["name", "args", "external", "deadline"], at: "next-step",
    take: (t, d) => {
      const c = callOf(t, d);
      return c && { name: c.name, args: c.args, external: c.external, deadline: c.deadline };
    },
  },
  // The completion tool's call (`builtin`) has no deadline.
  builtin_call: {
    anchor: "toolCallId", moved: ["name", "args", "external"], at: "next-step",
    take: (t, d) => {
      const c = callOf(t, d);
      return c && { name: c.name, args: c.args, external: c.external };
    },
  },
  tool_result: {
    anchor: "name", moved: ["ok", "outcome", "afterExecution"], at: "result",
    take: (t, d) => {
      const r = toolResultOf(t);
      return r && r.toolCallId === d.toolCallId ? { ok: r.outcome.ok, outcome: r.outcome, afterExecution: r.afterExecution } : undefined;
    },
  },
  planning: {
    anchor: "step", moved: ["text"], at: "next-step",
    take: (t) => {
      const m = modelStepOf(t);
      return m && { text: m.text };
    },
  },
  executing: {
    anchor: "step", moved: ["toolCallIds"], at: "next-step",
    take: (t) => {
      const ids = idsOf(t);
      return ids && { toolCallIds: ids };
    },
  },
  completed: {
    anchor: "model", moved: ["llmUsage", "llmResponseCost", "toolCallIds"], at: "previous-step",
    take: (t) => {
      const m = modelStepOf(t);
      return m && { llmUsage: m.usage, llmResponseCost: m.cost, toolCallIds: m.toolCalls.map((c) => c.id) };
    },
  },
  // A piece of the step's text: `from` and `to` are kept with `ref`.
  chunk: {
    anchor: "step", moved: ["text"], at: "next-step",
    take: (t, d) => {
      const m = modelStepOf(t);
      return m && typeof m.text === "string" && typeof d.from === "number" && typeof d.to === "number"
        ? { text: m.text.slice(d.from, d.to) }
        : undefined;
    },
  },
} satisfies Record<string, Form>;

/** The form of an event of this type and data (step events by phase); undefined for the others. */
function formOf(type: string, data: Data): Form | undefined {
  switch (type) {
    case "step":
      return data.phase === "planning" || data.phase === "executing" || data.phase === "completed" ? FORMS[data.phase] : undefined;
    case "tool_call":
      return data.builtin === true ? FORMS.builtin_call : FORMS.tool_call;
    case "tool_result":
      return FORMS.tool_result;
    case "chunk":
      return FORMS.chunk;
    default:
      return undefined;
  }
}

/** `data` without the form's moved fields, `extra` appended; null unless the moved fields follow the anchor directly. */
function without(data: Data, form: Form, extra: Data): Data | null {
  const keys = Object.keys(data);
  const a = keys.indexOf(form.anchor);
  if (a < 0 || form.moved.some((k, i) => keys[a + 1 + i] !== k)) return null;
  const out: Data = {};
  for (const k of keys) if (!form.moved.includes(k)) out[k] = data[k];
  return Object.assign(out, extra);
}

/** `data` with the moved fields back after the anchor and the reference fields dropped. */
function withMoved(data: Data, form: Form, values: Data): Data {
  const out: Data = {};
  for (const k of Object.keys(data)) {
    if (k === "ref" || (k === "from" || k === "to") && form === FORMS.chunk) continue;
    out[k] = data[k];
    if (k === form.anchor) for (const m of form.moved) out[m] = values[m];
  }
  return out;
}

/** The same value: identical, or arrays of identical items (the ids a step lists). */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => x === b[i]);
}

const eventOf = (e: NewEvent | undefined): { type?: string } | undefined =>
  e?.type === "transition" ? (e.data.event as { type?: string } | undefined) : undefined;
const modelStepOf = (e: NewEvent | undefined): ModelStep | undefined => {
  const ev = eventOf(e);
  return ev?.type === "MODEL_STEP" ? ev as ModelStep : undefined;
};
const toolResultOf = (e: NewEvent | undefined): ToolResult | undefined => {
  const ev = eventOf(e);
  return ev?.type === "TOOL_RESULT" ? ev as ToolResult : undefined;
};

/**
 * One commit's events in their stored form (the events are not changed; a
 * compacted event is a new object). Events keep their places, so `ref`
 * (an index distance here) is the id distance once the store appends them.
 */
export function compactEvents(events: readonly NewEvent[]): NewEvent[] {
  // The transitions of the commit that siblings may name.
  const steps: number[] = [];
  let results: Map<string, number> | null = null;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    if (e.type !== "transition") continue;
    if (modelStepOf(e)) steps.push(i);
    const r = toolResultOf(e);
    if (r) (results ??= new Map()).set(r.toolCallId, i);
  }
  if (steps.length === 0 && results === null) return events as NewEvent[];
  /** Characters of a MODEL_STEP's text the chunks before have covered, by its index. */
  const covered = new Map<number, number>();
  const out = new Array<NewEvent>(events.length);
  for (let i = 0; i < events.length; i++) out[i] = compactOne(events, i, steps, results, covered);
  return out;
}

/** Event `i` of a commit in its stored form (itself when it stays whole). */
function compactOne(
  events: readonly NewEvent[], i: number, steps: readonly number[], results: Map<string, number> | null, covered: Map<number, number>,
): NewEvent {
  const e = events[i];
  const form = formOf(e.type, e.data);
  // A field named like a reference field would be lost on the way back: such an event is stored whole.
  if (!form || "ref" in e.data || "from" in e.data || "to" in e.data) return e;
  const d = e.data;
  const j = form.at === "result" ? results?.get(d.toolCallId as string) : form.at === "next-step" ? firstAfter(steps, i) : lastBefore(steps, i);
  if (j === undefined || (form.at === "result" && j < i)) return e;
  const added: Data = { ref: j - i };
  let values: Data | undefined;
  if (form === FORMS.chunk) {
    // The next piece of the step's text.
    if (typeof d.text !== "string") return e;
    const from = covered.get(j) ?? 0;
    covered.set(j, from + d.text.length);
    added.from = from;
    added.to = from + d.text.length;
    values = form.take(events[j], { ...d, ...added });
  } else {
    // The other forms read the event's own fields only (its `toolCallId`), never the reference fields.
    values = form.take(events[j], d);
  }
  if (!values) return e;
  for (const k of form.moved) if (!same(values[k], d[k])) return e;
  // Never longer than the whole event: a reader's byte budget counts served bytes (`servedPage`).
  if (fieldsBytes(added) > minFieldsBytes(d, form.moved)) return e;
  const data = without(d, form, added);
  return data ? { type: e.type, data } : e;
}

/** The first of the ascending `xs` above `i`. */
function firstAfter(xs: readonly number[], i: number): number | undefined {
  for (let k = 0; k < xs.length; k++) if (xs[k] > i) return xs[k];
  return undefined;
}

/** The last of the ascending `xs` below `i`. */
function lastBefore(xs: readonly number[], i: number): number | undefined {
  for (let k = xs.length - 1; k >= 0; k--) if (xs[k] < i) return xs[k];
  return undefined;
}

/** Whether the event is stored compact (it names a transition by `ref`). */
export function isCompact(e: NewEvent): boolean {
  return typeof e.data?.ref === "number" && formOf(e.type, e.data) !== undefined;
}

/**
 * The served form of `page`: every compact event with its fields back, read
 * from the transition `byId(id + ref)`. Events of the old form and of other
 * types come as they are.
 */
export function expandEvents<E extends StoredEvent>(page: E[], byId: (id: number) => NewEvent | undefined): E[] {
  let out: E[] | null = null;
  for (let i = 0; i < page.length; i++) {
    const e = page[i];
    if (!isCompact(e)) continue;
    const form = formOf(e.type, e.data)!;
    const values = form.take(byId(e.id + (e.data.ref as number)), e.data);
    if (!values) continue;
    out ??= page.slice();
    out[i] = { ...e, data: withMoved(e.data, form, values) };
  }
  return out ?? page;
}

/** Bytes of `,"k":v` for numeric fields (exact). */
function fieldsBytes(fields: Data): number {
  let n = 0;
  for (const k in fields) n += k.length + 4 + String(fields[k]).length;
  return n;
}

/** A lower bound of the bytes of `,"k":v` for the named fields of `d` (a string's JSON is at least its length + 2). */
function minFieldsBytes(d: Data, keys: readonly string[]): number {
  let n = 0;
  for (const k of keys) {
    const v = d[k];
    n += k.length + 4 + (typeof v === "string" ? v.length + 2 : typeof v === "number" ? String(v).length : v === null || typeof v === "boolean" ? 4 : 2);
  }
  return n;
}

/**
 * `page` expanded (`expandEvents`); `byId` finds the transitions in the
 * store, read together with the page (`namedOutside`), so a page costs one
 * store read. A compact event whose transition the store does not hold (the
 * log cut within its commit, which retention never does) is never served:
 * it counts as trimmed, and the page starts after the last such event (an
 * empty answer for a non-empty page: the reader reads again after
 * `page.at(-1).id`). With `maxBytes`, cut before the first event that
 * passes the budget in its served form (the first event always comes), as
 * the budget of `Store.readEvents` counts the JSON of an event as it is
 * served. A served event is never shorter than its stored form, so the
 * stored budget already kept every event that fits.
 */
export function servedPage<E extends StoredEvent>(page: E[], byId: (id: number) => NewEvent | undefined, maxBytes?: number): E[] {
  let served = expandEvents(page, byId);
  for (let i = page.length - 1; i >= 0; i--) {
    const e = page[i];
    if (isCompact(e) && byId(e.id + (e.data.ref as number)) === undefined) {
      served = served.slice(i + 1);
      break;
    }
  }
  if (served === page || maxBytes === undefined) return served;
  let used = 0;
  for (let i = 0; i < served.length; i++) {
    used += utf8.encode(JSON.stringify(served[i])).byteLength;
    if (i > 0 && used > maxBytes) return served.slice(0, i);
  }
  return served;
}

const utf8 = new TextEncoder();

/**
 * The transitions outside `page` that its compact events name, taken from
 * `log` (the store's events by id; undefined where it holds none): what the
 * script store's read_events.lua answers with the page, in the same call.
 */
export function namedOutside(page: readonly StoredEvent[], byId: (id: number) => StoredEvent | undefined): StoredEvent[] {
  if (page.length === 0) return [];
  const first = page[0].id;
  const last = page[page.length - 1].id;
  const out = new Map<number, StoredEvent>();
  for (const e of page) {
    if (!isCompact(e)) continue;
    const t = e.id + (e.data.ref as number);
    if (t >= first && t <= last || out.has(t)) continue;
    const found = byId(t);
    if (found) out.set(t, found);
  }
  return [...out.values()];
}

/** Lookup by id in events of dense ids (any order of pages). */
export function byIdIn(events: readonly StoredEvent[]): (id: number) => StoredEvent | undefined {
  const m = new Map<number, StoredEvent>();
  for (const e of events) m.set(e.id, e);
  return (id) => m.get(id);
}
