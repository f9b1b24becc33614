/**
 * What an AI SDK failure means for a retry, read from the SDK's own error
 * types (detected by `isInstance`, which works across copies of
 * `@ai-sdk/provider`) and from in-band error objects of a stream.
 *
 * | what | retryable |
 * | --- | --- |
 * | `APICallError` | its `isRetryable` (the SDK: 408, 409, 429, 5xx, and connection failures) |
 * | an error object in the stream with a status `code` | 408, 429, 5xx |
 * | an error object whose `type` is `overloaded_error`, `rate_limit_error`, `api_error`, `timeout_error` (Anthropic's names for 529, 429, 500, 504) | yes |
 * | `InvalidResponseDataError`, `EmptyResponseBodyError` (a response cut short or incomplete) | yes |
 * | any other AI SDK error (`JSONParseError`, `TypeValidationError`, `InvalidPromptError`, `UnsupportedFunctionalityError`, …; the same request gets the same answer) | no |
 * | an error that is not the AI SDK's (a network failure below it) | yes |
 * | any other error object in the stream | no |
 *
 * The caller checks abort and timeout before it asks here.
 */
import { AISDKError, APICallError } from "@ai-sdk/provider";

/** Longest slice of a provider's message quoted. */
const MESSAGE_LIMIT = 500;

const RETRYABLE_SDK_ERRORS = new Set(["AI_InvalidResponseDataError", "AI_EmptyResponseBodyError"]);
const RETRYABLE_ERROR_TYPES = new Set(["overloaded_error", "rate_limit_error", "api_error", "timeout_error"]);

export interface Classified {
  message: string;
  retryable: boolean;
}

const cut = (s: string) => (s.length > MESSAGE_LIMIT ? s.slice(0, MESSAGE_LIMIT) + "…" : s);
const retryableStatus = (n: number) => n === 408 || n === 429 || n >= 500;

function header(headers: Record<string, string> | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return v;
  return undefined;
}

/** An error thrown by `doStream`/`doGenerate` or read from the stream. */
export function classifyError(err: unknown): Classified {
  if (APICallError.isInstance(err)) {
    const status = err.statusCode !== undefined ? `HTTP ${err.statusCode}: ` : "";
    const retryAfter = header(err.responseHeaders, "retry-after");
    const suffix = err.isRetryable && retryAfter ? ` (Retry-After: ${retryAfter})` : "";
    return { message: `${status}${cut(err.message)}${suffix}`, retryable: err.isRetryable };
  }
  if (AISDKError.isInstance(err)) {
    return { message: `${err.name}: ${cut(err.message)}`, retryable: RETRYABLE_SDK_ERRORS.has(err.name) };
  }
  if (err instanceof Error) return { message: `network error: ${cut(err.message)}`, retryable: true };
  return inBandError(err);
}

/** An error object a provider sent inside the stream (`{ message, code }`, Anthropic's `{ type, message }`). */
function inBandError(e: unknown): Classified {
  if (!e || typeof e !== "object") return { message: `provider reported an error: ${cut(String(e))}`, retryable: false };
  const o = e as { message?: unknown; code?: unknown; status?: unknown; type?: unknown };
  const message = typeof o.message === "string" ? o.message : JSON.stringify(e);
  const codeOf = (v: unknown) => (typeof v === "number" ? v : typeof v === "string" && /^\d{3}$/.test(v) ? Number(v) : NaN);
  const code = Number.isNaN(codeOf(o.code)) ? codeOf(o.status) : codeOf(o.code);
  const retryable = (!Number.isNaN(code) && retryableStatus(code)) || (typeof o.type === "string" && RETRYABLE_ERROR_TYPES.has(o.type));
  return { message: `provider reported an error: ${cut(message)}`, retryable };
}
