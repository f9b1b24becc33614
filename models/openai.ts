/**
 * openaiCompatible(): a model that talks to any OpenAI-compatible
 * chat-completions server (OpenAI, vLLM, llama.cpp, Ollama, OpenRouter) over
 * `fetch` only, so it runs on Node, Deno and Workers alike.
 *
 * Contract:
 * - One `generate()` is one POST to `<baseURL>/chat/completions`; the adapter
 *   never retries. It throws `ModelError` and says whether a retry may help:
 *   429, 408, 5xx, network errors, timeouts and truncated streams are
 *   `retryable`; other 4xx, bodies without choices and unreadable JSON are not.
 *   The host (actors/steps/model-step.ts) owns the retry budget and the backoff, so a
 *   `Retry-After` header only appears in the message.
 * - Error messages carry the server's own message and never the API key (it
 *   is redacted even where a server echoes it back).
 * - Tool call arguments that are not valid JSON do not throw: the raw text is
 *   passed on as `args` (a string). Tool arguments must be an object, so the
 *   host answers the call with an `invalid_arguments` tool error the model can
 *   read and correct; wrapping the text in an object instead could satisfy a
 *   schema whose fields are all optional or defaulted and run the tool with
 *   made-up arguments. Empty arguments (`""`) mean `{}`.
 * - Every assistant tool call is sent back with `arguments` as valid JSON
 *   (`JSON.stringify(args)`), even when the model's own text was not, because
 *   some servers parse it while rendering their chat template and would
 *   refuse the whole conversation.
 * - `req.signal` aborts the call (`retryable: false`); the timeout is the
 *   whole call, or with `stream: true` the longest wait for the response head
 *   or for the next piece of the stream.
 */
import { callDeadline, type Fail } from "./call-deadline.ts";
import { ModelError } from "../errors/errors.ts";
import type { Message } from "../common/message.ts";
import { costOf, isPricing, type Pricing } from "./pricing.ts";
import { parseArguments } from "./tool-arguments.ts";
import type { Model, ModelRequest, ModelResponse, ModelToolCallRequest } from "./types.ts";

export interface OpenAICompatibleOptions {
  /** Base URL of the API, e.g. `https://api.openai.com/v1` or `http://localhost:11434/v1`. */
  baseURL: string;
  /** Sent as `Authorization: Bearer <apiKey>` when given. */
  apiKey?: string;
  /** The model id the server knows, e.g. `gpt-4o-mini`. */
  model: string;
  /** Extra request headers (e.g. `api-key` for Azure, `HTTP-Referer` for OpenRouter). */
  headers?: Record<string, string>;
  temperature?: number;
  /** Sent as `max_tokens`. */
  maxTokens?: number;
  /** Prices per million tokens; when given, each response carries `cost`. */
  pricing?: Pricing;
  /** Default 120 000 ms. See the contract above for what it bounds with `stream: true`. */
  timeoutMs?: number;
  /** Ask for server-sent events and deliver text deltas to `onChunk` as they arrive. */
  stream?: boolean;
  /** A fetch implementation (default: the global `fetch`). */
  fetch?: typeof fetch;
}

export const DEFAULT_MODEL_TIMEOUT_MS = 120_000;
/** Longest slice of a server's error body quoted in a message. */
const ERROR_TEXT_LIMIT = 500;

/**
 * @example
 * const model = openaiCompatible({
 *   baseURL: "https://api.openai.com/v1",
 *   apiKey: env.OPENAI_API_KEY,
 *   model: "gpt-4o-mini",
 *   pricing: { inputPerMTok: 0.15, outputPerMTok: 0.6 },
 *   stream: true,
 * });
 * const agent = defineAgent({ name: "support", instructions: "Answer the customer.", model, tools: [lookup] });
 */
export function openaiCompatible(options: OpenAICompatibleOptions): Model {
  const o = checkOptions(options);
  const endpoint = chatCompletionsURL(o.baseURL);
  const safe = new URL(endpoint);
  const where = `Model "${o.model}" at ${safe.origin}${safe.pathname}`;
  const redact = (s: string) => (o.apiKey && o.apiKey.length >= 4 ? s.split(o.apiKey).join("[redacted]") : s);
  const timeoutMs = o.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS;
  // Called through globalThis: Workers refuse a `fetch` detached from its receiver ("Illegal invocation").
  const doFetch: (input: RequestInfo | URL, init?: RequestInit) => Promise<Response> =
    o.fetch ?? ((input, init) => globalThis.fetch(input, init));

  return {
    name: o.model,
    async generate(req: ModelRequest): Promise<ModelResponse> {
      const fail = (message: string, retryable: boolean, cause?: unknown) =>
        new ModelError(redact(`${where}: ${message}`), { retryable, cause });
      if (req.signal?.aborted) throw fail("call aborted", false);

      const body = requestBody(o, req, fail);
      const headers: Record<string, string> = {
        "content-type": "application/json",
        accept: o.stream ? "text/event-stream" : "application/json",
        ...o.headers,
      };
      if (o.apiKey) headers.authorization = `Bearer ${o.apiKey}`;

      const { signal, arm, stop, dispose, classify } = callDeadline(req.signal, timeoutMs, fail, (err) =>
        fail(`network error: ${(err as Error)?.message ?? String(err)}`, true, err));

      arm();
      try {
        let res: Response;
        try {
          res = await doFetch(endpoint, { method: "POST", headers, body: JSON.stringify(body), signal });
        } catch (err) {
          throw classify(err);
        }
        if (!res.ok) throw await httpError(res, fail);
        const isJson = (res.headers.get("content-type") ?? "").includes("application/json");
        if (o.stream && res.body && !isJson) {
          return await readStream(res.body, { arm, fail, onChunk: req.onChunk, pricing: o.pricing }).catch((err) => {
            throw classify(err);
          });
        }
        // Also the path of a server that ignored `stream: true` and answered with one JSON body.
        if (!o.stream) stop();
        let text: string;
        try {
          text = await res.text();
        } catch (err) {
          throw classify(err);
        }
        const out = parseCompletion(text, fail, o.pricing);
        if (o.stream && out.text && req.onChunk) req.onChunk(out.text);
        return out;
      } finally {
        dispose();
      }
    },
  };
}

// ---------------------------------------------------------------- options


function checkOptions(options: OpenAICompatibleOptions): OpenAICompatibleOptions {
  const bad = (what: string) => new TypeError(`openaiCompatible(): ${what}`);
  if (!options || typeof options !== "object") throw bad("needs an options object");
  const { baseURL, apiKey, model, headers, temperature, maxTokens, pricing, timeoutMs, fetch: f } = options;
  if (typeof baseURL !== "string" || !canParse(baseURL)) {
    throw bad(`baseURL must be an absolute http(s) URL, got ${JSON.stringify(baseURL)}`);
  }
  if (!/^https?:$/.test(new URL(baseURL).protocol)) throw bad(`baseURL must use http or https, got ${JSON.stringify(baseURL)}`);
  if (typeof model !== "string" || model.trim() === "") throw bad("model must be a non-empty string");
  if (apiKey !== undefined && typeof apiKey !== "string") throw bad("apiKey must be a string");
  if (headers !== undefined) {
    if (!headers || typeof headers !== "object" || Array.isArray(headers)) throw bad("headers must be an object of strings");
    for (const [k, v] of Object.entries(headers)) if (typeof v !== "string") throw bad(`header "${k}" must be a string`);
  }
  if (temperature !== undefined && (typeof temperature !== "number" || !Number.isFinite(temperature) || temperature < 0)) {
    throw bad(`temperature must be a number >= 0, got ${JSON.stringify(temperature)}`);
  }
  if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || maxTokens < 1)) {
    throw bad(`maxTokens must be a positive integer, got ${JSON.stringify(maxTokens)}`);
  }
  if (pricing !== undefined && !isPricing(pricing)) throw bad("pricing needs inputPerMTok and outputPerMTok as numbers >= 0");
  if (timeoutMs !== undefined && (typeof timeoutMs !== "number" || !(timeoutMs > 0) || !Number.isFinite(timeoutMs))) {
    throw bad(`timeoutMs must be a positive number, got ${JSON.stringify(timeoutMs)}`);
  }
  if (f !== undefined && typeof f !== "function") throw bad("fetch must be a function");
  return options;
}

function canParse(url: string): boolean {
  try {
    new URL(url);
    return true;
  } catch {
    return false;
  }
}

/** `<baseURL>/chat/completions`, with trailing slashes dropped and a query string (e.g. `api-version`) kept. */
function chatCompletionsURL(baseURL: string): string {
  const u = new URL(baseURL);
  u.pathname = u.pathname.replace(/\/+$/, "") + "/chat/completions";
  return u.toString();
}

// ---------------------------------------------------------------- request

/** A chat-completions message as the wire format wants it. */
type WireMessage =
  | { role: "system" | "user"; content: string; name?: string }
  | {
    role: "assistant";
    content: string | null;
    name?: string;
    tool_calls?: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }>;
  }
  | { role: "tool"; tool_call_id: string; content: string };

function toWireMessage(m: Message, fail: Fail): WireMessage {
  const name = typeof m.name === "string" && m.name !== "" ? { name: m.name } : {};
  switch (m.role) {
    case "system":
    case "user":
      return { role: m.role, content: m.content, ...name };
    case "assistant": {
      const calls = m.toolCalls ?? [];
      if (calls.length === 0) return { role: "assistant", content: m.content, ...name };
      return {
        role: "assistant",
        // The API wants null, not "", beside tool calls with no text.
        content: m.content === "" ? null : m.content,
        ...name,
        tool_calls: calls.map((c) => ({
          id: c.id,
          type: "function" as const,
          function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) },
        })),
      };
    }
    case "tool":
      if (typeof m.toolCallId !== "string" || m.toolCallId === "") {
        throw fail("a tool message has no toolCallId; the conversation cannot be sent", false);
      }
      return { role: "tool", tool_call_id: m.toolCallId, content: m.content };
    default:
      throw fail(`unknown message role ${JSON.stringify((m as Message).role)}`, false);
  }
}

function requestBody(o: OpenAICompatibleOptions, req: ModelRequest, fail: Fail): Record<string, unknown> {
  const body: Record<string, unknown> = { model: o.model, messages: req.messages.map((m) => toWireMessage(m, fail)) };
  if (req.tools.length > 0) {
    body.tools = req.tools;
    body.tool_choice = "auto";
  }
  if (o.temperature !== undefined) body.temperature = o.temperature;
  if (o.maxTokens !== undefined) body.max_tokens = o.maxTokens;
  if (o.stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

// ---------------------------------------------------------------- response

/** The error a non-2xx answer becomes, with the server's message and any Retry-After. */
async function httpError(res: Response, fail: Fail): Promise<ModelError> {
  let text = "";
  try {
    text = await res.text();
  } catch {
    // The status says enough.
  }
  const retryable = res.status === 429 || res.status === 408 || res.status >= 500;
  const detail = serverMessage(text);
  const retryAfter = res.headers.get("retry-after");
  const status = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""}`;
  return fail(
    `${status}${detail ? `: ${detail}` : ""}${retryable && retryAfter ? ` (Retry-After: ${retryAfter})` : ""}`,
    retryable,
  );
}

/** The message of `{ error: { message } }`, `{ error: "..." }` (Ollama) or `{ message }`, else the text itself. */
function serverMessage(text: string): string {
  let out = text.trim();
  try {
    const j = JSON.parse(text) as { error?: unknown; message?: unknown };
    const e = j?.error;
    if (e && typeof e === "object" && typeof (e as { message?: unknown }).message === "string") {
      out = (e as { message: string }).message;
    } else if (typeof e === "string") out = e;
    else if (typeof j?.message === "string") out = j.message;
  } catch {
    // Not JSON: quote the text.
  }
  return out.length > ERROR_TEXT_LIMIT ? out.slice(0, ERROR_TEXT_LIMIT) + "…" : out;
}

/** An `error` object inside a 200 body or a stream chunk (OpenRouter reports upstream failures this way). */
function inBandError(j: Record<string, unknown>, fail: Fail): ModelError | null {
  const e = j.error;
  if (e === undefined || e === null) return null;
  const code = typeof e === "object" ? (e as { code?: unknown }).code : undefined;
  const n = typeof code === "number" ? code : typeof code === "string" && /^\d{3}$/.test(code) ? Number(code) : NaN;
  const retryable = n === 429 || n === 408 || n >= 500;
  return fail(`server reported an error: ${serverMessage(JSON.stringify(j))}`, retryable);
}

interface RawToolCall {
  id?: string;
  name: string;
  arguments: string;
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((p) => (p && typeof p === "object" && typeof (p as { text?: unknown }).text === "string" ? (p as { text: string }).text : "")).join("");
  }
  return "";
}

function finish(
  text: string,
  calls: RawToolCall[],
  usage: unknown,
  pricing: OpenAICompatibleOptions["pricing"],
): ModelResponse {
  const out: ModelResponse = {};
  if (text !== "") out.text = text;
  if (calls.length > 0) {
    out.toolCalls = calls.map((c): ModelToolCallRequest => ({
      ...(typeof c.id === "string" && c.id !== "" ? { id: c.id } : {}),
      name: c.name,
      args: parseArguments(c.arguments),
    }));
  }
  const u = usage as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
  const count = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : 0);
  if (u && typeof u === "object" && (typeof u.prompt_tokens === "number" || typeof u.completion_tokens === "number")) {
    out.usage = { inputTokens: count(u.prompt_tokens), outputTokens: count(u.completion_tokens) };
    if (pricing) out.cost = costOf(out.usage, pricing);
  }
  return out;
}

/** A whole (non-streaming) chat-completions body -> ModelResponse. */
function parseCompletion(text: string, fail: Fail, pricing: OpenAICompatibleOptions["pricing"]): ModelResponse {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch {
    throw fail(`response body is not JSON: ${JSON.stringify(text.slice(0, 200))}`, false);
  }
  if (!j || typeof j !== "object" || Array.isArray(j)) throw fail("response body is not a JSON object", false);
  const body = j as Record<string, unknown>;
  const choices = body.choices;
  if (!Array.isArray(choices) || choices.length === 0) {
    throw inBandError(body, fail) ?? fail("response has no choices", false);
  }
  const message = (choices[0] as { message?: unknown })?.message as Record<string, unknown> | undefined;
  if (!message || typeof message !== "object") throw fail("response choices[0] has no message", false);
  const rawCalls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  const calls: RawToolCall[] = rawCalls.map((c: unknown) => {
    const call = (c ?? {}) as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
    const args = call.function?.arguments;
    return {
      id: typeof call.id === "string" ? call.id : undefined,
      name: typeof call.function?.name === "string" ? call.function.name : "",
      // Some servers send arguments as an object already; keep it as JSON text for one parse path.
      arguments: typeof args === "string" ? args : args === undefined || args === null ? "" : JSON.stringify(args),
    };
  });
  return finish(contentText(message.content), calls, body.usage, pricing);
}

// ---------------------------------------------------------------- streaming

interface StreamOptions {
  /** Restarts the idle timer. */
  arm: () => void;
  fail: Fail;
  onChunk?: (text: string) => void;
  pricing: OpenAICompatibleOptions["pricing"];
}

/**
 * Reads `data: {...}` server-sent events until `data: [DONE]`: text deltas go
 * to `onChunk` in order, tool call deltas are assembled by their `index`, and
 * the usage comes from the chunk that carries it (the last one with
 * `include_usage`).
 */
async function readStream(body: ReadableStream<Uint8Array>, s: StreamOptions): Promise<ModelResponse> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let data: string[] = [];
  let text = "";
  let usage: unknown = undefined;
  let done = false;
  let finished = false;
  const calls: Array<RawToolCall & { index: number }> = [];

  const onEvent = (payload: string) => {
    if (payload.trim() === "[DONE]") {
      done = true;
      return;
    }
    let j: Record<string, unknown>;
    try {
      j = JSON.parse(payload);
    } catch {
      throw s.fail(`stream chunk is not JSON: ${JSON.stringify(payload.slice(0, 200))}`, false);
    }
    if (!j || typeof j !== "object") throw s.fail("stream chunk is not a JSON object", false);
    const err = inBandError(j, s.fail);
    if (err) throw err;
    if (j.usage && typeof j.usage === "object") usage = j.usage;
    const choices = Array.isArray(j.choices) ? j.choices : [];
    for (const ch of choices) {
      const choice = (ch ?? {}) as { index?: unknown; delta?: Record<string, unknown>; finish_reason?: unknown };
      if (typeof choice.index === "number" && choice.index !== 0) continue;
      if (typeof choice.finish_reason === "string") finished = true;
      const delta = choice.delta ?? {};
      const piece = contentText(delta.content);
      if (piece !== "") {
        text += piece;
        s.onChunk?.(piece);
      }
      const deltas = Array.isArray(delta.tool_calls) ? delta.tool_calls : [];
      for (const d of deltas) {
        const td = (d ?? {}) as { index?: unknown; id?: unknown; function?: { name?: unknown; arguments?: unknown } };
        // Servers that omit `index` send each call whole; give it the next slot.
        const index = typeof td.index === "number" ? td.index : calls.length;
        let call = calls.find((c) => c.index === index);
        if (!call) {
          call = { index, name: "", arguments: "" };
          calls.push(call);
        }
        if (typeof td.id === "string" && td.id !== "" && !call.id) call.id = td.id;
        // The name comes once; some servers repeat it in every delta, so it is set, never appended.
        if (typeof td.function?.name === "string" && td.function.name !== "" && call.name === "") call.name = td.function.name;
        const args = td.function?.arguments;
        if (typeof args === "string") call.arguments += args;
        else if (args && typeof args === "object") call.arguments += JSON.stringify(args);
      }
    }
  };

  const onLine = (line: string) => {
    if (line === "") {
      // A blank line ends an event (SSE): its data lines are joined with "\n".
      if (data.length > 0) onEvent(data.join("\n"));
      data = [];
      return;
    }
    if (line.startsWith(":")) return; // comment / keep-alive
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") data.push(value);
  };

  try {
    while (!done) {
      const r = await reader.read();
      if (r.done) break;
      s.arm();
      buffer += decoder.decode(r.value, { stream: true });
      let nl: number;
      while (!done && (nl = buffer.indexOf("\n")) !== -1) {
        const line = buffer.slice(0, nl).replace(/\r$/, "");
        buffer = buffer.slice(nl + 1);
        onLine(line);
      }
    }
    if (!done) {
      buffer += decoder.decode();
      for (const line of buffer.split("\n")) onLine(line.replace(/\r$/, ""));
      onLine("");
    }
  } finally {
    // Stop the download when [DONE] came early or a chunk failed; errors here change nothing.
    reader.cancel().catch(() => {});
  }
  if (!done && !finished) throw s.fail("stream ended before [DONE]", true);
  calls.sort((a, b) => a.index - b.index);
  return finish(text, calls, usage, s.pricing);
}
