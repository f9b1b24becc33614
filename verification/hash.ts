/**
 * Canonical JSON and the candidate hash. Canonical form: object keys sorted by
 * UTF-16 code units, no whitespace, numbers in JavaScript's shortest
 * round-trip form (so 1.0 and 1 are the same), -0 written as 0, strings as
 * JSON.stringify writes them, `undefined` members dropped. Non-finite numbers
 * have no JSON form and are refused.
 */

export function canonicalJson(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`Cannot canonicalize non-finite number ${value}`);
      return Object.is(value, -0) ? "0" : JSON.stringify(value);
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "bigint":
      return value.toString();
    case "object": {
      if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`;
      const json = (value as { toJSON?: () => unknown }).toJSON;
      if (typeof json === "function") return canonicalJson(json.call(value));
      const keys = Object.keys(value as object).filter((k) => (value as Record<string, unknown>)[k] !== undefined).sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(",")}}`;
    }
    default:
      throw new TypeError(`Cannot canonicalize a ${typeof value}`);
  }
}

/** SHA-256 (Web Crypto) of canonical JSON, lowercase hex. */
export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export function candidateHash(candidate: unknown): Promise<string> {
  return sha256Hex(canonicalJson(candidate));
}
