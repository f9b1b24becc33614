/**
 * aiSdkModel(): any AI SDK language model (the provider packages'
 * `LanguageModelV3`, AI SDK 6; `LanguageModelV2`, AI SDK 5) as a gatehouse
 * model.
 *
 * Contract:
 * - One `generate()` is one `doStream()` (default) or `doGenerate()` call on
 *   the provider's model; the adapter never retries (the host owns retries,
 *   actors/steps/model-step.ts) and never runs a tool: tools go to the model as
 *   function tools with their JSON Schema, and the tool calls the model makes
 *   come back to the host. `streamText`/`generateText` are not used.
 * - Streaming: every `text-delta` goes to `onChunk` in order as it arrives,
 *   and the whole text is returned too. Tool calls are taken from the
 *   `tool-call` parts (arguments parsed as `openaiCompatible` does: `{}` when
 *   empty, the raw text when not JSON); calls the provider ran itself
 *   (`providerExecuted`) are not returned. A stream that ends without its
 *   `finish` part is a retryable error.
 * - Usage: `inputTokens.total`/`outputTokens.total` (v3) or the flat
 *   numbers (v2); no usage when the provider reports neither. `pricing`
 *   gives `cost` from it.
 * - Errors are `ModelError`s classified by models/ai-sdk/errors.ts; the
 *   caller's abort is `retryable: false` and checked first; the timeout
 *   (`timeoutMs`: the whole call, or with streaming the wait for the stream
 *   and for each next part) is retryable. The request's signal, linked with
 *   the timeout, is passed to the provider as `abortSignal`; the adapter also
 *   stops waiting on its own, so a provider that ignores the signal cannot
 *   hold a claim.
 */
import type { LanguageModelV2, LanguageModelV3, LanguageModelV3CallOptions, SharedV3ProviderOptions } from "@ai-sdk/provider";
import { callDeadline, type Fail } from "../call-deadline.ts";
import { ModelError } from "../../errors/errors.ts";
import { costOf, isPricing, type Pricing } from "../pricing.ts";
import { parseArguments } from "../tool-arguments.ts";
import type { Model, ModelRequest, ModelResponse, ModelToolCallRequest } from "../types.ts";
import { classifyError } from "./errors.ts";
import { PromptError, promptOf, toolsOf } from "./prompt.ts";

/** A provider's language model object: AI SDK 6 (specification v3) or AI SDK 5 (v2). */
export type AiSdkLanguageModel = LanguageModelV3 | LanguageModelV2;

export interface AiSdkModelOptions {
  /** The adapter's `name` (the `model` field of `step` events). Default: the model's `modelId`. */
  name?: string;
  /** Prices per million tokens; when given, each response carries `cost`. */
  pricing?: Pricing;
  /** Call `doStream` and deliver text deltas to `onChunk` (default true); false calls `doGenerate`. */
  stream?: boolean;
  temperature?: number;
  /** Sent as `maxOutputTokens`. */
  maxOutputTokens?: number;
  /** Default 120 000 ms: the whole call, or with `stream` the wait for the stream and for each next part. */
  timeoutMs?: number;
  /** Extra request headers, passed to the provider. */
  headers?: Record<string, string>;
  /** Passed to the provider as is, e.g. `{ anthropic: { thinking: { type: "disabled" } } }`. */
  providerOptions?: SharedV3ProviderOptions;
}

export const DEFAULT_AI_SDK_TIMEOUT_MS = 120_000;

type Usage = { inputTokens: number; outputTokens: number };

/**
 * @example
 * import { createAnthropic } from "@ai-sdk/anthropic";
 * import { aiSdkModel } from "@gatehouse-runtime/core/ai-sdk";
 * const anthropic = createAnthropic({ apiKey: env.ANTHROPIC_API_KEY });
 * const model = aiSdkModel(anthropic("claude-sonnet-4-5"), { pricing: { inputPerMTok: 3, outputPerMTok: 15 } });
 */
export function aiSdkModel(model: AiSdkLanguageModel, options: AiSdkModelOptions = {}): Model {
  checkModel(model);
  const o = checkOptions(options);
  const name = o.name ?? model.modelId;
  const where = `Model "${name}" (${model.provider})`;
  const timeoutMs = o.timeoutMs ?? DEFAULT_AI_SDK_TIMEOUT_MS;
  const stream = o.stream ?? true;
  return {
    name,
    async generate(req: ModelRequest): Promise<ModelResponse> {
      const fail: Fail = (message, retryable, cause) => new ModelError(`${where}: ${message}`, { retryable, cause });
      if (req.signal?.aborted) throw fail("call aborted", false);
      let call: LanguageModelV3CallOptions;
      try {
        call = callOptions(o, req);
      } catch (err) {
        if (err instanceof PromptError) throw fail(err.message, false, err);
        throw err;
      }

      const { signal, arm, dispose, classify } = callDeadline(req.signal, timeoutMs, fail, (err) => {
        const c = classifyError(err);
        return fail(c.message, c.retryable, err);
      });
      call.abortSignal = signal;

      arm();
      try {
        if (!stream) {
          const r = await untilAborted(Promise.resolve(model.doGenerate(call as never)), signal);
          return response(r.content as Part[], r.usage, o.pricing);
        }
        const r = await untilAborted(Promise.resolve(model.doStream(call as never)), signal);
        arm();
        return await readStream(r.stream as ReadableStream<Part>, { arm, signal: signal, fail, classify, onChunk: req.onChunk, pricing: o.pricing });
      } catch (err) {
        throw classify(err);
      } finally {
        dispose();
      }
    },
  };
}

// ---------------------------------------------------------------- options

function checkModel(model: unknown): asserts model is AiSdkLanguageModel {
  const bad = (what: string) => new TypeError(`aiSdkModel(): ${what}`);
  if (typeof model === "string") {
    throw bad(`needs a provider's model object, e.g. anthropic("claude-sonnet-4-5"), not the id ${JSON.stringify(model)}`);
  }
  if (!model || typeof model !== "object") throw bad("needs a language model object");
  const m = model as { specificationVersion?: unknown; doStream?: unknown; doGenerate?: unknown; modelId?: unknown };
  if (m.specificationVersion !== "v3" && m.specificationVersion !== "v2") {
    throw bad(`supports language model specification v3 (AI SDK 6) and v2 (AI SDK 5), got ${JSON.stringify(m.specificationVersion)}`);
  }
  if (typeof m.doStream !== "function" || typeof m.doGenerate !== "function") throw bad("the model has no doStream/doGenerate");
  if (typeof m.modelId !== "string") throw bad("the model has no modelId");
}

function checkOptions(options: AiSdkModelOptions): AiSdkModelOptions {
  const bad = (what: string) => new TypeError(`aiSdkModel(): ${what}`);
  if (!options || typeof options !== "object") throw bad("options must be an object");
  const { name, pricing, stream, temperature, maxOutputTokens, timeoutMs, headers, providerOptions } = options;
  if (name !== undefined && (typeof name !== "string" || name.trim() === "")) throw bad("name must be a non-empty string");
  if (pricing !== undefined && !isPricing(pricing)) throw bad("pricing needs inputPerMTok and outputPerMTok as numbers >= 0");
  if (stream !== undefined && typeof stream !== "boolean") throw bad("stream must be a boolean");
  if (temperature !== undefined && (typeof temperature !== "number" || !Number.isFinite(temperature) || temperature < 0)) {
    throw bad(`temperature must be a number >= 0, got ${JSON.stringify(temperature)}`);
  }
  if (maxOutputTokens !== undefined && (!Number.isInteger(maxOutputTokens) || maxOutputTokens < 1)) {
    throw bad(`maxOutputTokens must be a positive integer, got ${JSON.stringify(maxOutputTokens)}`);
  }
  if (timeoutMs !== undefined && (typeof timeoutMs !== "number" || !(timeoutMs > 0) || !Number.isFinite(timeoutMs))) {
    throw bad(`timeoutMs must be a positive number, got ${JSON.stringify(timeoutMs)}`);
  }
  if (headers !== undefined) {
    if (!headers || typeof headers !== "object" || Array.isArray(headers)) throw bad("headers must be an object of strings");
    for (const [k, v] of Object.entries(headers)) if (typeof v !== "string") throw bad(`header "${k}" must be a string`);
  }
  if (providerOptions !== undefined && (!providerOptions || typeof providerOptions !== "object" || Array.isArray(providerOptions))) {
    throw bad("providerOptions must be an object");
  }
  return options;
}

function callOptions(o: AiSdkModelOptions, req: ModelRequest): LanguageModelV3CallOptions {
  const call: LanguageModelV3CallOptions = { prompt: promptOf(req.messages) };
  if (req.tools.length > 0) {
    call.tools = toolsOf(req.tools);
    call.toolChoice = { type: "auto" };
  }
  if (o.temperature !== undefined) call.temperature = o.temperature;
  if (o.maxOutputTokens !== undefined) call.maxOutputTokens = o.maxOutputTokens;
  if (o.headers) call.headers = { ...o.headers };
  if (o.providerOptions) call.providerOptions = o.providerOptions;
  return call;
}

/** `p`, or a rejection as soon as `signal` aborts (a provider that ignores the signal cannot hold the call). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

// ---------------------------------------------------------------- response

/** The parts of content and stream this adapter reads, in the shape v3 and v2 share. */
type Part =
  | { type: "text"; text: string }
  | { type: "text-delta"; delta: string }
  | { type: "tool-call"; toolCallId: string; toolName: string; input: string; providerExecuted?: boolean }
  | { type: "finish"; usage: unknown }
  | { type: "error"; error: unknown }
  | { type: "other" };

function toolCallOf(p: Extract<Part, { type: "tool-call" }>): ModelToolCallRequest {
  return {
    ...(typeof p.toolCallId === "string" && p.toolCallId !== "" ? { id: p.toolCallId } : {}),
    name: p.toolName,
    args: parseArguments(p.input),
  };
}

/** v3 `{ inputTokens: { total } }` or v2 `{ inputTokens: number }`; undefined when neither count is there. */
function usageOf(u: unknown): Usage | undefined {
  if (!u || typeof u !== "object") return undefined;
  const count = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined);
  const total = (v: unknown) => (v && typeof v === "object" ? count((v as { total?: unknown }).total) : count(v));
  const { inputTokens, outputTokens } = u as { inputTokens?: unknown; outputTokens?: unknown };
  const input = total(inputTokens);
  const output = total(outputTokens);
  if (input === undefined && output === undefined) return undefined;
  return { inputTokens: input ?? 0, outputTokens: output ?? 0 };
}

function finish(text: string, calls: ModelToolCallRequest[], usage: unknown, pricing: Pricing | undefined): ModelResponse {
  const out: ModelResponse = {};
  if (text !== "") out.text = text;
  if (calls.length > 0) out.toolCalls = calls;
  const u = usageOf(usage);
  if (u) {
    out.usage = u;
    if (pricing) out.cost = costOf(u, pricing);
  }
  return out;
}

/** A `doGenerate` result -> ModelResponse. */
function response(content: Part[], usage: unknown, pricing: Pricing | undefined): ModelResponse {
  let text = "";
  const calls: ModelToolCallRequest[] = [];
  for (const p of content ?? []) {
    if (p.type === "text") text += p.text;
    else if (p.type === "tool-call" && !p.providerExecuted) calls.push(toolCallOf(p));
  }
  return finish(text, calls, usage, pricing);
}

interface StreamOptions {
  /** Restarts the idle timer. */
  arm: () => void;
  signal: AbortSignal;
  fail: Fail;
  classify: (err: unknown) => ModelError;
  onChunk?: (text: string) => void;
  pricing: Pricing | undefined;
}

/** Reads the parts up to `finish`: text deltas to `onChunk` in order, tool calls collected, the first `error` part thrown. */
async function readStream(stream: ReadableStream<Part>, s: StreamOptions): Promise<ModelResponse> {
  const reader = stream.getReader();
  let text = "";
  const calls: ModelToolCallRequest[] = [];
  try {
    for (;;) {
      const r = await untilAborted(reader.read(), s.signal);
      if (r.done) throw s.fail("stream ended before its finish part", true);
      s.arm();
      const p = r.value;
      switch (p.type) {
        case "text-delta":
          if (typeof p.delta === "string" && p.delta !== "") {
            text += p.delta;
            s.onChunk?.(p.delta);
          }
          break;
        case "tool-call":
          if (!p.providerExecuted) calls.push(toolCallOf(p));
          break;
        case "error":
          throw s.classify(p.error);
        case "finish":
          return finish(text, calls, p.usage, s.pricing);
      }
    }
  } finally {
    // Stop the provider's download once done or failed; errors here change nothing.
    reader.cancel().catch(() => {});
  }
}
