/**
 * Deliverable contracts: what a successful result must look like.
 *
 * A deliverable is one of
 * - `{ type: "object", required?: string[] }`: a plain object holding every
 *   required key (tolerant spelling, contracts/keys.ts) with a value that is
 *   not null;
 * - `{ type: "array", items?: { type?: "object", required: string[] } }`: an
 *   array; with `items`, every element is such an object;
 * - a zod schema: the value parses (object keys are looked up tolerantly:
 *   the schema sees a view with the expected spellings, the value is never
 *   changed).
 *
 * Mismatch taxonomy (the first one found wins):
 * - `nil_required_input`: the value is null/undefined, or a required key
 *   holds null/undefined;
 * - `type_mismatch`: the value (or an element) has another shape, or a zod
 *   schema refuses a value whose keys are all there;
 * - `missing_required_key`: a required key is absent in every spelling.
 *
 * Pure and deterministic: the same deliverable and value give the same
 * result, so a redelivered external result compares equal (first-wins
 * duplicates stay duplicates).
 */
import type { ContractMismatch, ToleratedKey } from "../common/contract-validation.ts";
import { DefinitionError } from "../errors/errors.ts";
import { canonicalView, findKey } from "./keys.ts";
import { isPlainRecord, shapeOf } from "./shape.ts";

export interface ObjectDeliverable {
  type: "object";
  required?: readonly string[];
}

export interface ArrayDeliverable {
  type: "array";
  /** Keys every element must hold (elements must then be objects). */
  items?: { type?: "object"; required: readonly string[] };
}

/** The structural part of a zod schema this module uses (zod v4 classic and mini). */
export interface ZodLike {
  _zod: { def: { type: string; shape?: Record<string, unknown>; element?: unknown } };
  safeParse(v: unknown): { success: boolean; error?: { issues: Array<{ code?: string; path?: PropertyKey[]; message: string }> } };
}

export type Deliverable = ObjectDeliverable | ArrayDeliverable | ZodLike;

export interface DeliverableCheck {
  passed: boolean;
  mismatch: ContractMismatch | null;
  expectedShape: string;
  actualShape: string;
  expectedKeys: string[];
  actualKeys: string[];
  tolerated: ToleratedKey[];
  /** One sentence on what is wrong (empty when passed). */
  detail: string;
}

export function isZodLike(v: unknown): v is ZodLike {
  return !!v && typeof v === "object" && typeof (v as ZodLike).safeParse === "function" &&
    typeof (v as ZodLike)._zod?.def?.type === "string";
}

const KEY = /^.{1,128}$/s;

/** Checks a deliverable at definition time; throws DefinitionError (key `deliverable…`). */
export function checkDeliverableDefinition(d: unknown, where: string): asserts d is Deliverable {
  if (isZodLike(d)) return;
  const fail = (msg: string, key = "deliverable"): never => {
    throw new DefinitionError(`${where}: ${msg}`, { key });
  };
  if (!isPlainRecord(d)) {
    fail(`deliverable must be { type: "object", required?: [...] }, { type: "array", items?: { required: [...] } } or a zod schema, got ${JSON.stringify(d) ?? String(d)}`);
  }
  const o = d as Record<string, unknown>;
  const keyList = (v: unknown, key: string) => {
    if (!Array.isArray(v) || !v.every((k) => typeof k === "string" && KEY.test(k))) {
      fail(`${key} must be a list of key names (1-128 characters each)`, key);
    }
    if (new Set(v as string[]).size !== (v as string[]).length) fail(`${key} names a key twice`, key);
  };
  if (o.type === "object") {
    for (const k of Object.keys(o)) if (k !== "type" && k !== "required") fail(`deliverable has an unknown field "${k}"`, `deliverable.${k}`);
    if (o.required !== undefined) keyList(o.required, "deliverable.required");
    return;
  }
  if (o.type === "array") {
    for (const k of Object.keys(o)) if (k !== "type" && k !== "items") fail(`deliverable has an unknown field "${k}"`, `deliverable.${k}`);
    if (o.items !== undefined) {
      if (!isPlainRecord(o.items) || (o.items.type !== undefined && o.items.type !== "object")) {
        fail(`deliverable.items must be { type?: "object", required: [...] }`, "deliverable.items");
      }
      keyList((o.items as Record<string, unknown>).required, "deliverable.items.required");
    }
    return;
  }
  fail(`deliverable.type must be "object" or "array", got ${JSON.stringify(o.type) ?? "nothing"}`, "deliverable.type");
}

/** The shape and keys a deliverable promises (for metadata and the registry). */
export function expectedOf(d: Deliverable): { shape: string; keys: string[] } {
  if (isZodLike(d)) {
    const def = d._zod.def;
    if (def.type === "object") return { shape: "object", keys: requiredZodKeys(def.shape ?? {}) };
    if (def.type === "array" && isZodLike(def.element) && def.element._zod.def.type === "object") {
      return { shape: "array", keys: requiredZodKeys(def.element._zod.def.shape ?? {}) };
    }
    return { shape: def.type, keys: [] };
  }
  if (d.type === "object") return { shape: "object", keys: [...(d.required ?? [])] };
  return { shape: "array", keys: [...(d.items?.required ?? [])] };
}

function requiredZodKeys(shape: Record<string, unknown>): string[] {
  return Object.entries(shape).filter(([, s]) => !isZodLike(s) || !s.safeParse(undefined).success).map(([k]) => k);
}

interface KeyCheck {
  mismatch: ContractMismatch | null;
  detail: string;
  tolerated: ToleratedKey[];
}

/** Required keys in one object: absent (in every spelling) or holding null. */
function checkKeys(obj: Record<string, unknown>, required: readonly string[], where: string): KeyCheck {
  const tolerated: ToleratedKey[] = [];
  for (const e of required) {
    const k = findKey(obj, e);
    if (k === null) {
      return { mismatch: "missing_required_key", detail: `${where}required key "${e}" is missing (in any spelling)`, tolerated };
    }
    if (k !== e) tolerated.push({ expected: e, found: k });
    if (obj[k] === null || obj[k] === undefined) {
      return { mismatch: "nil_required_input", detail: `${where}required key "${e}"${k !== e ? ` (found as "${k}")` : ""} is null`, tolerated };
    }
  }
  return { mismatch: null, detail: "", tolerated };
}

/** Checks a value against a deliverable. */
export function checkDeliverable(d: Deliverable, value: unknown): DeliverableCheck {
  const exp = expectedOf(d);
  const actualShape = shapeOf(value);
  const firstItem = Array.isArray(value) ? value.find(isPlainRecord) : undefined;
  const actualKeys = isPlainRecord(value) ? Object.keys(value) : isPlainRecord(firstItem) ? Object.keys(firstItem) : [];
  const base = { expectedShape: exp.shape, actualShape, expectedKeys: exp.keys, actualKeys };
  const result = (k: KeyCheck): DeliverableCheck => ({ ...base, passed: k.mismatch === null, ...k });
  if (actualShape === "null") {
    return result({ mismatch: "nil_required_input", detail: `the value is null, expected ${exp.shape === "array" ? "an array" : `a value of shape ${exp.shape}`}`, tolerated: [] });
  }
  if (isZodLike(d)) return checkZod(d, value, base);
  if (d.type === "object") {
    if (actualShape !== "object") return result({ mismatch: "type_mismatch", detail: `expected an object, got ${actualShape}`, tolerated: [] });
    return result(checkKeys(value as Record<string, unknown>, d.required ?? [], ""));
  }
  if (actualShape !== "array") return result({ mismatch: "type_mismatch", detail: `expected an array, got ${actualShape}`, tolerated: [] });
  const required = d.items?.required;
  if (!required) return result({ mismatch: null, detail: "", tolerated: [] });
  const tolerated: ToleratedKey[] = [];
  const items = value as unknown[];
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (!isPlainRecord(item)) {
      return result({ mismatch: "type_mismatch", detail: `item ${i}: expected an object, got ${shapeOf(item)}`, tolerated });
    }
    const k = checkKeys(item, required, `item ${i}: `);
    for (const t of k.tolerated) if (!tolerated.some((x) => x.expected === t.expected && x.found === t.found)) tolerated.push(t);
    if (k.mismatch) return { ...result({ ...k, tolerated }), actualKeys: Object.keys(item) };
  }
  return result({ mismatch: null, detail: "", tolerated });
}

function checkZod(d: ZodLike, value: unknown, base: Omit<DeliverableCheck, "passed" | "mismatch" | "tolerated" | "detail">): DeliverableCheck {
  const def = d._zod.def;
  const tolerated: ToleratedKey[] = [];
  const viewOf = (obj: Record<string, unknown>, keys: string[]) => {
    for (const e of keys) {
      const k = findKey(obj, e);
      if (k !== null && k !== e && !tolerated.some((t) => t.expected === e && t.found === k)) tolerated.push({ expected: e, found: k });
    }
    return canonicalView(obj, keys);
  };
  let view: unknown = value;
  const objectKeys = def.type === "object" ? Object.keys(def.shape ?? {}) : null;
  const element = def.type === "array" && isZodLike(def.element) && def.element._zod.def.type === "object" ? def.element : null;
  if (objectKeys && isPlainRecord(value)) view = viewOf(value, objectKeys);
  if (element && Array.isArray(value)) {
    const keys = Object.keys(element._zod.def.shape ?? {});
    view = value.map((v) => isPlainRecord(v) ? viewOf(v, keys) : v);
  }
  const parsed = d.safeParse(view);
  if (parsed.success) return { ...base, passed: true, mismatch: null, tolerated, detail: "" };
  const issues = parsed.error?.issues ?? [];
  const first = issues[0];
  const path = (first?.path ?? []).map(String);
  let mismatch: ContractMismatch = "type_mismatch";
  // A required key absent in every spelling: the issue is at a one-key path and the key is not in the (viewed) object.
  const holder = (p: string[]): unknown => p.slice(0, -1).reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], view);
  if (first && path.length > 0) {
    const h = holder(path);
    const last = path[path.length - 1];
    if (isPlainRecord(h)) {
      if (!Object.hasOwn(h, last)) mismatch = "missing_required_key";
      else if (h[last] === null || h[last] === undefined) mismatch = "nil_required_input";
    }
  }
  const at = path.length > 0 ? ` at "${path.join(".")}"` : "";
  return { ...base, passed: false, mismatch, tolerated, detail: `the schema refused the value${at}: ${first?.message ?? "invalid"}` };
}
