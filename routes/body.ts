/**
 * Request input: JSON bodies (media type, size limit, parsing) and zod
 * validation. Every failure is a `ProblemError`, thrown before the route
 * touches the store, so bad input changes nothing.
 *
 * Order of checks on a body: declared `Content-Length` above the limit (413),
 * media type (415), the bytes actually read above the limit (413: a lying or
 * absent `Content-Length` cannot bypass it; reading stops at limit + 1 byte),
 * UTF-8 (400 `malformed_json`), the JSON limits on the text (400
 * `json_limit_exceeded`: nesting depth, string length, items per array or
 * object; a linear scan before `JSON.parse`, so a hostile body is refused
 * before any structure is built from it), JSON syntax (400 `malformed_json`),
 * well-formed text (400 `validation_failed` naming the field: a string or key
 * holding a lone UTF-16 surrogate, which `JSON.parse` accepts from an escape
 * such as `"\ud800"`; store/port.ts invariant `well-formed-text`), then the
 * schema (400 `validation_failed`).
 *
 * Invariant: every 400 `validation_failed` names each issue's field and the
 * rule it breaks in its `detail` (`describeIssues`) and lists all of them in
 * `errors`; a cross-field rule reports its issue at the field to change, with
 * a message that says what to send instead.
 */
import type { Context } from "hono";
import type { z } from "zod";
import { DEFAULT_JSON_LIMITS, describeViolation, type JsonLimits, scanJsonText } from "../common/json-bounds.ts";
import { ProblemError } from "./problem.ts";
import { loneSurrogateAt, mayHoldSurrogateEscape } from "../common/well-formed.ts";

/** What a body may be: its size in bytes and the JSON limits. */
export interface BodyLimits {
  maxBodyBytes: number;
  json?: JsonLimits;
}

/** `application/json` or any `application/*+json`, parameters (charset) allowed. */
export function isJsonMediaType(contentType: string | null): boolean {
  if (contentType === null) return false;
  const type = contentType.split(";")[0].trim().toLowerCase();
  return type === "application/json" || /^application\/[a-z0-9.!#$&^_-]+\+json$/.test(type);
}

/** Reads at most `max` bytes of a body stream; throws 413 as soon as there are more. */
export async function readCapped(body: ReadableStream<Uint8Array> | null, max: number): Promise<Uint8Array> {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch {
        // The client went away mid-upload (or the stream broke): not a server error, nothing was read into the store.
        throw new ProblemError("malformed_json", "The body could not be read to its end");
      }
      const { done, value } = chunk;
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        // Stop reading: the rest of an oversized body is never buffered.
        await reader.cancel().catch(() => {});
        throw new ProblemError("payload_too_large", `The body exceeds ${max} bytes`, { extra: { limit: max } });
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * The parsed JSON body of the request. With `optional`, an absent or empty
 * body (whatever its media type) yields `undefined`; a non-empty one must
 * still be JSON.
 */
export async function readJson(c: Context, limits: number | BodyLimits, opts: { optional?: boolean } = {}): Promise<unknown> {
  const maxBytes = typeof limits === "number" ? limits : limits.maxBodyBytes;
  const jsonLimits = (typeof limits === "number" ? undefined : limits.json) ?? DEFAULT_JSON_LIMITS;
  const req = c.req.raw;
  const declared = req.headers.get("content-length");
  if (declared !== null) {
    if (!/^\d{1,15}$/.test(declared.trim())) {
      throw new ProblemError("validation_failed", "Content-Length must be a decimal integer", {
        extra: { errors: [{ path: ["Content-Length"], code: "invalid_format", message: "not a decimal integer" }] },
      });
    }
    if (Number(declared) > maxBytes) {
      throw new ProblemError("payload_too_large", `The body exceeds ${maxBytes} bytes`, { extra: { limit: maxBytes } });
    }
  }
  const json = isJsonMediaType(req.headers.get("content-type"));
  if (!json && !opts.optional) {
    throw new ProblemError("unsupported_media_type", "The body must be sent as Content-Type: application/json");
  }
  const bytes = await readCapped(req.body, maxBytes);
  if (bytes.byteLength === 0) {
    if (opts.optional) return undefined;
    throw new ProblemError("malformed_json", "The body is empty; a JSON value is required");
  }
  if (!json) throw new ProblemError("unsupported_media_type", "The body must be sent as Content-Type: application/json");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new ProblemError("malformed_json", "The body is not valid UTF-8");
  }
  const violation = scanJsonText(text, jsonLimits);
  if (violation) {
    throw new ProblemError("json_limit_exceeded", describeViolation(violation), {
      extra: { limit: violation.limit, max: violation.max },
    });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ProblemError("malformed_json", `The body is not valid JSON: ${(err as Error).message}`);
  }
  // The text is valid UTF-8, so a lone surrogate can only come from an escape: the value is walked only then.
  if (mayHoldSurrogateEscape(text)) refuseLoneSurrogate(value);
  return value;
}

/** 400 `validation_failed` naming the first string or key of `value` that holds a lone surrogate. */
function refuseLoneSurrogate(value: unknown): void {
  const at = loneSurrogateAt(value);
  if (at === null) return;
  const field = at.length === 0 ? "the body" : `the body field ${at.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`)).join("")}`;
  const message = "holds a lone UTF-16 surrogate (an escape \\ud800-\\udfff without its pair); text must be well-formed Unicode";
  throw new ProblemError("validation_failed", `${field[0].toUpperCase()}${field.slice(1)} ${message}`, {
    extra: { errors: [{ path: at, code: "lone_surrogate", message }] },
  });
}

/** Issues as plain JSON: `{ path, code, message }` (paths keep only strings and numbers). */
export function issuesOf(error: z.ZodError): Array<{ path: Array<string | number>; code: string; message: string }> {
  return error.issues.map((i) => ({
    path: i.path.map((p) => (typeof p === "number" ? p : String(p))),
    code: i.code,
    message: i.message,
  }));
}

/** Issues named in a `detail`; the rest are counted (all of them are in `errors`). */
const DETAIL_ISSUES = 5;
/** Characters of one issue's field and of its rule in a `detail` (a key is the client's text, of any length). */
const DETAIL_PART_CHARS = 120;

const clip = (text: string) => (text.length > DETAIL_PART_CHARS ? `${text.slice(0, DETAIL_PART_CHARS - 1)}…` : text);

/**
 * The `detail` of a 400 `validation_failed`: each issue as `field: rule`
 * (the path dotted, `(body)` / `(query)`… for the value itself), the first
 * five, the others counted. Bounded (under 1,000 characters) whatever the
 * client sent.
 */
export function describeIssues(where: string, issues: ReadonlyArray<{ path: ReadonlyArray<string | number>; code?: string; message: string }>): string {
  const named = issues.slice(0, DETAIL_ISSUES).map((i) => `${clip(i.path.length === 0 ? `(${where})` : i.path.join("."))}: ${clip(i.message)}`);
  const more = issues.length > DETAIL_ISSUES ? `; and ${issues.length - DETAIL_ISSUES} more (see errors)` : "";
  return `The ${where} does not match the schema${named.length ? `: ${named.join("; ")}` : ""}${more}`;
}

/** The 400 `validation_failed` of a zod error: every issue in `errors`, named in `detail` (`describeIssues`). */
export function validationProblem(error: z.ZodError, where: string): ProblemError {
  const errors = issuesOf(error);
  return new ProblemError("validation_failed", describeIssues(where, errors), { extra: { errors } });
}

/** Validates `value` against `schema`; throws 400 `validation_failed` with the zod issues in `errors`. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw validationProblem(r.error, where);
  return r.data;
}

/** Reads and validates a JSON body. */
export async function jsonBody<S extends z.ZodType>(c: Context, limits: number | BodyLimits, schema: S): Promise<z.output<S>> {
  return validate(schema, await readJson(c, limits), "body");
}

/** Reads and validates an optional JSON body (absent or empty: `undefined`). */
export async function optionalJsonBody<S extends z.ZodType>(
  c: Context,
  limits: number | BodyLimits,
  schema: S,
): Promise<z.output<S> | undefined> {
  const raw = await readJson(c, limits, { optional: true });
  return raw === undefined ? undefined : validate(schema, raw, "body");
}

/**
 * The query string as an object: a parameter given once is a string, one
 * given more than once an array (which the string schemas refuse).
 */
export function queryOf(c: Context): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, vs] of Object.entries(c.req.queries())) out[k] = vs.length === 1 ? vs[0] : vs;
  return out;
}
