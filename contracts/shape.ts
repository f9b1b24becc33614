/** The JSON shape of a value, as contract metadata names it: `null` (also undefined), `array`, `object`, `string`, `number`, `boolean`. */
export type Shape = "null" | "array" | "object" | "string" | "number" | "boolean";

export function shapeOf(v: unknown): Shape {
  if (v === null || v === undefined) return "null";
  if (Array.isArray(v)) return "array";
  const t = typeof v;
  if (t === "string" || t === "number" || t === "boolean") return t;
  return "object";
}

/** Empty for a precondition: null, undefined, "", [] and {} (a string of spaces is not empty). */
export function isEmptyValue(v: unknown): boolean {
  if (v === null || v === undefined || v === "") return true;
  if (Array.isArray(v)) return v.length === 0;
  if (typeof v === "object") return Object.keys(v as object).length === 0;
  return false;
}

export function isPlainRecord(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === "object" && !Array.isArray(v);
}
