/**
 * The stored form of an agent's event log and the served form
 * (machines/event-log.ts, "Stored form and served form"): within one commit, a
 * payload a `transition` carries is stored once, in the transition, and the
 * sibling events that repeat it name the transition by `ref` (its id minus
 * their own) instead.
 *
 * | event              | field(s) stored in the transition      | from                          |
 * |--------------------|----------------------------------------|-------------------------------|
 * | `tool_call`        | `args`                                 | `MODEL_STEP` call of that id  |
 * | `tool_result`      | `outcome`                              | `TOOL_RESULT` of that id      |
 * | `step` planning    | `text`                                 | `MODEL_STEP.text`             |
 * | `step` executing   | `toolCallIds`                          | `MODEL_STEP.toolCalls` ids    |
 * | `step` completed   | `llmUsage`, `llmResponseCost`, `toolCallIds` | `MODEL_STEP` usage, cost, ids |
 * | `chunk`            | `text` (kept: `from`, `to`)            | `MODEL_STEP.text.slice(from, to)` |
 *
 * Invariants:
 * - `compactEvents` changes an event only when the transition holds the very
 *   value (the same object, string or number; ids equal one by one) and the
 *   moved fields follow their anchor field directly; `expandEvents` puts
 *   them back after the anchor, so the expanded data is the written data,
 *   key order included.
 * - Only catalogued types with a numeric `ref` are expanded: a log written
 *   before (no `ref` anywhere) passes unchanged (upgrade on read).
 * - An event whose transition cannot be found is served as stored (it does
 *   not happen: a commit's events are appended and trimmed together).
 * - A compact event is never longer than the event it stands for (counted
 *   without serializing: a lower bound of the moved fields' JSON against the
 *   exact length of `ref`, `from`, `to`), so a page cut by a budget of stored
 *   bytes holds every event that fits the same budget served.
 * - Cheap on the write path: one pass over a commit's events, identity
 *   comparisons only.
 */
import type { NewEvent, StoredEvent } from "./events.ts";

type Data = Record<string, unknown>;
type Call = { id: string; args: unknown };
type ModelStep = { type: "MODEL_STEP"; text: string | null; toolCalls: Call[]; usage: unknown; cost: number };
type ToolResult = { type: "TOOL_RESULT"; toolCallId: string; outcome: unknown };

/** Where the moved fields sit in the full data: right after `anchor`. */
interface Form {
  anchor: string;
  moved: readonly string[];
}

const FORMS: Record<string, Form> = {
  tool_call: { anchor: "name", moved: ["args"] },
  tool_result: { anchor: "ok", moved: ["outcome"] },
  planning: { anchor: "step", moved: ["text"] },
  executing: { anchor: "step", moved: ["toolCallIds"] },
  completed: { anchor: "model", moved: ["llmUsage", "llmResponseCost", "toolCallIds"] },
  chunk: { anchor: "step", moved: ["text"] },
};

/** The form of an event of this type and data (step events by phase); undefined for the others. */
function formOf(type: string, data: Data): Form | undefined {
  if (type === "step") return typeof data.phase === "string" && data.phase !== "started" ? FORMS[data.phase] : undefined;
  return type === "tool_call" || type === "tool_result" || type === "chunk" ? FORMS[type] : undefined;
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

const sameIds = (ids: unknown, calls: Call[]) =>
  Array.isArray(ids) && ids.length === calls.length && ids.every((id, i) => id === calls[i].id);

const modelStepOf = (e: NewEvent | undefined): ModelStep | undefined => {
  const ev = e?.type === "transition" ? (e.data.event as { type?: string } | undefined) : undefined;
  return ev?.type === "MODEL_STEP" ? ev as ModelStep : undefined;
};
const toolResultOf = (e: NewEvent | undefined): ToolResult | undefined => {
  const ev = e?.type === "transition" ? (e.data.event as { type?: string } | undefined) : undefined;
  return ev?.type === "TOOL_RESULT" ? ev as ToolResult : undefined;
};

/**
 * One commit's events in their stored form (the events are not changed; a
 * compacted event is a new object). Events keep their places, so `ref`
 * (an index distance here) is the id distance once the store appends them.
 */
export function compactEvents(events: readonly NewEvent[]): NewEvent[] {
  // The transitions of the commit, by the values siblings may name.
  const steps: number[] = [];
  const results = new Map<string, number>();
  events.forEach((e, i) => {
    if (modelStepOf(e)) steps.push(i);
    const r = toolResultOf(e);
    if (r) results.set(r.toolCallId, i);
  });
  if (steps.length === 0 && results.size === 0) return events as NewEvent[];
  /** Characters of a MODEL_STEP's text the chunks before have covered, by its index. */
  const covered = new Map<number, number>();
  return events.map((e, i) => {
    const form = formOf(e.type, e.data);
    // A field named like a reference field would be lost on the way back: such an event is stored whole.
    if (!form || "ref" in e.data || "from" in e.data || "to" in e.data) return e;
    const d = e.data;
    let j = -1;
    let extra: Data = {};
    if (e.type === "tool_result") {
      const at = results.get(d.toolCallId as string);
      if (at !== undefined && at > i && toolResultOf(events[at])!.outcome === d.outcome) j = at;
    } else if (e.type === "step" && d.phase === "completed") {
      const at = findLast(steps, (s) => s < i);
      const m = at === undefined ? undefined : modelStepOf(events[at])!;
      if (m && m.usage === d.llmUsage && m.cost === d.llmResponseCost && sameIds(d.toolCallIds, m.toolCalls)) j = at!;
    } else {
      const at = steps.find((s) => s > i);
      const m = at === undefined ? undefined : modelStepOf(events[at])!;
      if (!m) return e;
      if (e.type === "tool_call") {
        if (m.toolCalls.some((c) => c.id === d.toolCallId && c.args === d.args)) j = at!;
      } else if (d.phase === "planning") {
        if (typeof d.text === "string" && m.text === d.text) j = at!;
      } else if (d.phase === "executing") {
        if (sameIds(d.toolCallIds, m.toolCalls)) j = at!;
      } else if (typeof d.text === "string" && m.text !== null) {
        // A chunk: the next piece of the step's text.
        const from = covered.get(at!) ?? 0;
        const to = from + d.text.length;
        covered.set(at!, to);
        if (m.text.slice(from, to) === d.text) {
          j = at!;
          extra = { from, to };
        }
      }
    }
    if (j < 0) return e;
    const added = { ref: j - i, ...extra };
    // Never longer than the whole event: a reader's byte budget counts served bytes (`servedPage`).
    if (fieldsBytes(added) > minFieldsBytes(d, form.moved)) return e;
    const data = without(d, form, added);
    return data ? { type: e.type, data } : e;
  });
}

/** Bytes of `,"k":v` for numeric fields (exact). */
function fieldsBytes(fields: Data): number {
  let n = 0;
  for (const [k, v] of Object.entries(fields)) n += k.length + 4 + String(v).length;
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

function findLast(xs: number[], p: (x: number) => boolean): number | undefined {
  for (let k = xs.length - 1; k >= 0; k--) if (p(xs[k])) return xs[k];
  return undefined;
}

/** Whether the event is stored compact (it names a transition by `ref`). */
export function isCompact(e: NewEvent): boolean {
  return typeof e.data?.ref === "number" && formOf(e.type, e.data) !== undefined;
}

/** The moved values of a compact event, read from its transition; null when the transition does not hold them. */
function movedValues(e: NewEvent, t: NewEvent | undefined): Data | null {
  const d = e.data;
  if (e.type === "tool_result") {
    const r = toolResultOf(t);
    return r && r.toolCallId === d.toolCallId ? { outcome: r.outcome } : null;
  }
  const m = modelStepOf(t);
  if (!m) return null;
  if (e.type === "tool_call") {
    const c = m.toolCalls.find((c) => c.id === d.toolCallId);
    return c ? { args: c.args } : null;
  }
  if (e.type === "chunk") {
    return typeof m.text === "string" && typeof d.from === "number" && typeof d.to === "number" ? { text: m.text.slice(d.from, d.to) } : null;
  }
  const ids = m.toolCalls.map((c) => c.id);
  if (d.phase === "planning") return { text: m.text };
  if (d.phase === "executing") return { toolCallIds: ids };
  return { llmUsage: m.usage, llmResponseCost: m.cost, toolCallIds: ids };
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
    const values = movedValues(e, byId(e.id + (e.data.ref as number)));
    if (!values) continue;
    out ??= page.slice();
    out[i] = { ...e, data: withMoved(e.data, formOf(e.type, e.data)!, values) };
  }
  return out ?? page;
}

/** The ids outside `page` that its compact events name (null: none). */
export function refsOutside(page: readonly StoredEvent[]): { lo: number; hi: number } | null {
  if (page.length === 0) return null;
  const first = page[0].id;
  const last = page[page.length - 1].id;
  let lo = Infinity;
  let hi = -Infinity;
  for (const e of page) {
    if (!isCompact(e)) continue;
    const t = e.id + (e.data.ref as number);
    if (t >= first && t <= last) continue;
    lo = Math.min(lo, t);
    hi = Math.max(hi, t);
  }
  return lo === Infinity ? null : { lo, hi };
}

/**
 * A page read with `read` (events with id > after, at most limit) in its
 * served form: the transitions outside the page that it names are read with
 * one more `read` of just their range. `maxBytes`: the page was read within
 * that budget of stored bytes; it is cut to the budget of served bytes too.
 */
export async function readServed(
  read: (after: number, limit: number) => Promise<StoredEvent[]>,
  page: StoredEvent[],
  maxBytes?: number,
): Promise<StoredEvent[]> {
  const out = refsOutside(page);
  const more = out ? await read(out.lo - 1, out.hi - out.lo + 1) : [];
  return servedPage(page, byIdIn(more.length > 0 ? [...page, ...more] : page), maxBytes);
}

/**
 * `page` expanded (`expandEvents`); with `maxBytes`, cut before the first
 * event that passes the budget in its served form (the first event always
 * comes), as the budget of `Store.readEvents` counts the JSON of an event as
 * it is served. A served event is never shorter than its stored form, so the
 * stored budget already kept every event that fits.
 */
export function servedPage<E extends StoredEvent>(page: E[], byId: (id: number) => NewEvent | undefined, maxBytes?: number): E[] {
  const served = expandEvents(page, byId);
  if (served === page || maxBytes === undefined) return served;
  let used = 0;
  for (let i = 0; i < served.length; i++) {
    used += utf8.encode(JSON.stringify(served[i])).byteLength;
    if (i > 0 && used > maxBytes) return served.slice(0, i);
  }
  return served;
}

const utf8 = new TextEncoder();

/** Lookup by id in events of dense ids (any order of pages). */
export function byIdIn(events: readonly StoredEvent[]): (id: number) => StoredEvent | undefined {
  const m = new Map<number, StoredEvent>();
  for (const e of events) m.set(e.id, e);
  return (id) => m.get(id);
}
