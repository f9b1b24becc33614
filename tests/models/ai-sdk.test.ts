/**
 * aiSdkModel() against the AI SDK's own test model (`MockLanguageModelV3`
 * from `ai/test`) and a hand-written specification v2 model: what the
 * provider model is called with (prompt, tools, options, the abort signal),
 * what comes back (streamed text to `onChunk`, tool calls, usage, cost), how
 * failures are classified, and one turn through the host with the streamed
 * text stored as `chunk` events. The provider packages over HTTP are in
 * tests/models/ai-sdk-providers.int.test.ts.
 */
import { APICallError, type LanguageModelV2, type LanguageModelV3StreamPart, TypeValidationError } from "@ai-sdk/provider";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { aiSdkModel } from "@gatehouse-runtime/core/ai-sdk";
import { createGatehouse, defineAgent, defineTool, type Message, ModelError, type ModelRequest } from "@gatehouse-runtime/core";
import type { ToolSpec } from "../../tools/specs.ts";

const LOOKUP_SPEC: ToolSpec = {
  type: "function",
  function: {
    name: "lookup",
    description: "Find a customer",
    parameters: { type: "object", properties: { email: { type: "string" } }, required: ["email"] },
  },
};

function request(over: Partial<ModelRequest> = {}): ModelRequest {
  return {
    agentId: "a1",
    turnId: "t1",
    step: 1,
    messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }],
    tools: [],
    signal: new AbortController().signal,
    ...over,
  };
}

async function modelError(p: Promise<unknown>): Promise<ModelError> {
  const err = await p.then(() => null, (e: unknown) => e);
  expect(err).toBeInstanceOf(ModelError);
  return err as ModelError;
}

const usage = (input: number | undefined, output: number | undefined) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
const stop = { unified: "stop" as const, raw: "stop" };
const toolCalls = { unified: "tool-calls" as const, raw: "tool_calls" };

function streamOf(parts: LanguageModelV3StreamPart[]) {
  return { stream: simulateReadableStream({ chunks: parts, chunkDelayInMs: null }) };
}
const textParts = (pieces: string[]): LanguageModelV3StreamPart[] => [
  { type: "text-start", id: "t" },
  ...pieces.map((delta): LanguageModelV3StreamPart => ({ type: "text-delta", id: "t", delta })),
  { type: "text-end", id: "t" },
];

describe("aiSdkModel() request", () => {
  it("sends the conversation as the specification's prompt, the tools as function tools with their JSON Schema, and the options", async () => {
    const mock = new MockLanguageModelV3({
      doStream: streamOf([...textParts(["ok"]), { type: "finish", usage: usage(1, 1), finishReason: stop }]),
    });
    const messages: Message[] = [
      { role: "system", content: "sys" },
      { role: "system", content: "Summary of the earlier conversation:\nnone" },
      { role: "user", content: "find a@b.c", name: "dana" },
      { role: "assistant", content: "", toolCalls: [{ id: "call_1", name: "lookup", args: { email: "a@b.c" } }] },
      { role: "tool", toolCallId: "call_1", content: '{"id":7}' },
      { role: "assistant", content: "Checking", toolCalls: [{ id: "call_2", name: "lookup", args: "{broken" }] },
      { role: "tool", toolCallId: "call_2", content: "error" },
      { role: "assistant", content: "" },
      { role: "system", content: "You must end this turn by calling one of: submit_result." },
    ];
    const ac = new AbortController();
    await aiSdkModel(mock, { temperature: 0.2, maxOutputTokens: 64, headers: { "x-extra": "1" }, providerOptions: { test: { a: 1 } } })
      .generate(request({ messages, tools: [LOOKUP_SPEC], signal: ac.signal }));
    expect(mock.doStreamCalls).toHaveLength(1);
    expect(mock.doGenerateCalls).toHaveLength(0);
    const call = mock.doStreamCalls[0]!;
    expect(call.prompt).toEqual([
      { role: "system", content: "sys" },
      { role: "system", content: "Summary of the earlier conversation:\nnone" },
      { role: "user", content: [{ type: "text", text: "find a@b.c" }] },
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "call_1", toolName: "lookup", input: { email: "a@b.c" } }] },
      { role: "tool", content: [{ type: "tool-result", toolCallId: "call_1", toolName: "lookup", output: { type: "text", value: '{"id":7}' } }] },
      {
        role: "assistant",
        // Arguments that are not an object go back as {} (Anthropic refuses any other tool input).
        content: [{ type: "text", text: "Checking" }, { type: "tool-call", toolCallId: "call_2", toolName: "lookup", input: {} }],
      },
      { role: "tool", content: [{ type: "tool-result", toolCallId: "call_2", toolName: "lookup", output: { type: "text", value: "error" } }] },
      // The empty assistant message is left out; a later system message goes as user text.
      { role: "user", content: [{ type: "text", text: "You must end this turn by calling one of: submit_result." }] },
    ]);
    expect(call.tools).toEqual([{ type: "function", name: "lookup", description: "Find a customer", inputSchema: LOOKUP_SPEC.function.parameters }]);
    expect(call.toolChoice).toEqual({ type: "auto" });
    expect(call.temperature).toBe(0.2);
    expect(call.maxOutputTokens).toBe(64);
    expect(call.headers).toEqual({ "x-extra": "1" });
    expect(call.providerOptions).toEqual({ test: { a: 1 } });
    // The caller's signal reaches the provider (linked with the timeout).
    expect(call.abortSignal).toBeInstanceOf(AbortSignal);
    expect(call.abortSignal!.aborted).toBe(false);
    ac.abort();
    expect(call.abortSignal!.aborted).toBe(true);
  });

  it("sends no tools or toolChoice without tools, and calls doGenerate with stream: false", async () => {
    const mock = new MockLanguageModelV3({
      doGenerate: { content: [{ type: "text", text: "whole" }], finishReason: stop, usage: usage(3, 2), warnings: [] },
    });
    const seen: string[] = [];
    const res = await aiSdkModel(mock, { stream: false }).generate(request({ onChunk: (t) => seen.push(t) }));
    expect(mock.doGenerateCalls).toHaveLength(1);
    expect(mock.doStreamCalls).toHaveLength(0);
    expect("tools" in mock.doGenerateCalls[0]!).toBe(false);
    expect("toolChoice" in mock.doGenerateCalls[0]!).toBe(false);
    expect(res).toEqual({ text: "whole", usage: { inputTokens: 3, outputTokens: 2 } });
    expect(seen).toEqual([]);
  });

  it("rejects a model id string, an old specification and bad options with a TypeError naming them", () => {
    const mock = new MockLanguageModelV3();
    expect(() => aiSdkModel("anthropic/claude" as never)).toThrow(/model object/);
    expect(() => aiSdkModel({ ...mock, specificationVersion: "v1" } as never)).toThrow(/specification v3/);
    expect(() => aiSdkModel(mock, { pricing: { inputPerMTok: -1, outputPerMTok: 1 } })).toThrow(/pricing/);
    expect(() => aiSdkModel(mock, { timeoutMs: 0 })).toThrow(/timeoutMs/);
    expect(() => aiSdkModel(mock, { maxOutputTokens: 1.5 })).toThrow(/maxOutputTokens/);
    expect(() => aiSdkModel(mock, { temperature: Number.NaN })).toThrow(/temperature/);
    expect(() => aiSdkModel(mock, { name: "" })).toThrow(/name/);
    expect(aiSdkModel(mock).name).toBe("mock-model-id");
    expect(aiSdkModel(mock, { name: "mine" }).name).toBe("mine");
  });

  it("does not call the model when the signal is already aborted", async () => {
    const mock = new MockLanguageModelV3();
    const ac = new AbortController();
    ac.abort();
    const err = await modelError(aiSdkModel(mock).generate(request({ signal: ac.signal })));
    expect(err.retryable).toBe(false);
    expect(mock.doStreamCalls).toHaveLength(0);
  });
});

describe("aiSdkModel() response", () => {
  it("streams text deltas to onChunk in order, returns the whole text, usage and cost", async () => {
    const mock = new MockLanguageModelV3({
      doStream: streamOf([
        { type: "stream-start", warnings: [] },
        { type: "response-metadata", id: "r1" },
        { type: "reasoning-start", id: "r" },
        { type: "reasoning-delta", id: "r", delta: "thinking" },
        { type: "reasoning-end", id: "r" },
        ...textParts(["Hel", "lo, ", "world"]),
        { type: "finish", usage: usage(1200, 300), finishReason: stop },
      ]),
    });
    const seen: string[] = [];
    const res = await aiSdkModel(mock, { pricing: { inputPerMTok: 2.5, outputPerMTok: 10 } })
      .generate(request({ onChunk: (t) => seen.push(t) }));
    expect(seen).toEqual(["Hel", "lo, ", "world"]);
    expect(res.text).toBe("Hello, world");
    expect(res.usage).toEqual({ inputTokens: 1200, outputTokens: 300 });
    expect(res.cost).toBeCloseTo((1200 * 2.5 + 300 * 10) / 1e6, 12);
  });

  it("returns tool calls with arguments parsed, {} for empty ones, raw text for unparsable ones; not the provider-executed ones", async () => {
    const mock = new MockLanguageModelV3({
      doStream: streamOf([
        { type: "tool-input-start", id: "c1", toolName: "lookup" },
        { type: "tool-input-delta", id: "c1", delta: '{"email":"a@b.c"}' },
        { type: "tool-input-end", id: "c1" },
        { type: "tool-call", toolCallId: "c1", toolName: "lookup", input: '{"email":"a@b.c"}' },
        { type: "tool-call", toolCallId: "c2", toolName: "ping", input: "" },
        { type: "tool-call", toolCallId: "c3", toolName: "lookup", input: '{"email": "a@b' },
        { type: "tool-call", toolCallId: "ws", toolName: "web_search", input: "{}", providerExecuted: true },
        { type: "tool-result", toolCallId: "ws", toolName: "web_search", result: { hits: [] } },
        { type: "finish", usage: usage(undefined, undefined), finishReason: toolCalls },
      ]),
    });
    const res = await aiSdkModel(mock, { pricing: { inputPerMTok: 1, outputPerMTok: 1 } }).generate(request({ tools: [LOOKUP_SPEC] }));
    expect(res).toEqual({
      toolCalls: [
        { id: "c1", name: "lookup", args: { email: "a@b.c" } },
        { id: "c2", name: "ping", args: {} },
        { id: "c3", name: "lookup", args: '{"email": "a@b' },
      ],
    });
  });

  it("reads doGenerate content the same way", async () => {
    const mock = new MockLanguageModelV3({
      doGenerate: {
        content: [
          { type: "reasoning", text: "hmm" },
          { type: "text", text: "Looking " },
          { type: "text", text: "it up" },
          { type: "tool-call", toolCallId: "c1", toolName: "lookup", input: '{"email":"x@y.z"}' },
        ],
        finishReason: toolCalls,
        usage: usage(7, undefined),
        warnings: [],
      },
    });
    const res = await aiSdkModel(mock, { stream: false }).generate(request({ tools: [LOOKUP_SPEC] }));
    expect(res).toEqual({
      text: "Looking it up",
      toolCalls: [{ id: "c1", name: "lookup", args: { email: "x@y.z" } }],
      usage: { inputTokens: 7, outputTokens: 0 },
    });
  });

  it("takes a specification v2 model (AI SDK 5): flat usage numbers", async () => {
    const calls: unknown[] = [];
    const v2: LanguageModelV2 = {
      specificationVersion: "v2",
      provider: "legacy",
      modelId: "legacy-1",
      supportedUrls: {},
      doGenerate: async () => {
        throw new Error("not used");
      },
      doStream: async (options) => {
        calls.push(options);
        return {
          stream: simulateReadableStream({
            chunks: [
              { type: "text-start", id: "t" },
              { type: "text-delta", id: "t", delta: "v2 " },
              { type: "text-delta", id: "t", delta: "text" },
              { type: "text-end", id: "t" },
              { type: "tool-call", toolCallId: "k", toolName: "lookup", input: '{"email":"v@2"}' },
              { type: "finish", usage: { inputTokens: 4, outputTokens: 6, totalTokens: 10 }, finishReason: "tool-calls" },
            ],
            chunkDelayInMs: null,
          }),
        };
      },
    };
    const seen: string[] = [];
    const res = await aiSdkModel(v2, { pricing: { inputPerMTok: 1, outputPerMTok: 1 } })
      .generate(request({ tools: [LOOKUP_SPEC], onChunk: (t) => seen.push(t) }));
    expect(seen).toEqual(["v2 ", "text"]);
    expect(res).toEqual({
      text: "v2 text",
      toolCalls: [{ id: "k", name: "lookup", args: { email: "v@2" } }],
      usage: { inputTokens: 4, outputTokens: 6 },
      cost: 10 / 1e6,
    });
    expect(calls).toHaveLength(1);
  });
});

describe("aiSdkModel() errors", () => {
  const apiError = (statusCode: number | undefined, message: string, headers?: Record<string, string>, isRetryable?: boolean) =>
    new APICallError({ message, url: "http://model.invalid/v1/x", requestBodyValues: {}, statusCode, responseHeaders: headers, isRetryable });

  it("an APICallError is retryable as the SDK says: 429 with Retry-After, 503, a connection failure yes; 400 and 401 no", async () => {
    const cases: Array<[APICallError, boolean, string[]]> = [
      [apiError(429, "Rate limited", { "Retry-After": "7" }), true, ["HTTP 429", "Rate limited", "Retry-After: 7"]],
      [apiError(503, "busy"), true, ["HTTP 503", "busy"]],
      [apiError(undefined, "Cannot connect to API: ECONNREFUSED", undefined, true), true, ["Cannot connect to API"]],
      [apiError(400, "Invalid value for 'tools'"), false, ["HTTP 400", "Invalid value for 'tools'"]],
      [apiError(401, "Invalid API key"), false, ["HTTP 401"]],
    ];
    for (const [thrown, retryable, parts] of cases) {
      const mock = new MockLanguageModelV3({
        doStream: async () => {
          throw thrown;
        },
      });
      const err = await modelError(aiSdkModel(mock).generate(request()));
      expect(err.retryable, err.message).toBe(retryable);
      for (const p of parts) expect(err.message).toContain(p);
      expect(err.message).toContain('Model "mock-model-id" (mock-provider)');
      expect(err.cause).toBe(thrown);
    }
  });

  it("other SDK errors: a malformed response is not retryable, a response cut short is; a non-SDK error is a retryable network error", async () => {
    const thrown: Array<[unknown, boolean]> = [
      [new TypeValidationError({ value: {}, cause: new Error("bad") }), false],
      [new Error("socket hang up"), true],
    ];
    for (const [e, retryable] of thrown) {
      const mock = new MockLanguageModelV3({
        doGenerate: async () => {
          throw e;
        },
      });
      const err = await modelError(aiSdkModel(mock, { stream: false }).generate(request()));
      expect(err.retryable, err.message).toBe(retryable);
    }
  });

  it("an error part in the stream fails the call, retryable by its code or type; text before it was still streamed", async () => {
    const cases: Array<[unknown, boolean]> = [
      [{ message: "Provider returned error", code: 502 }, true],
      [{ type: "overloaded_error", message: "Overloaded" }, true],
      [{ message: "content policy", code: 400 }, false],
      [apiError(429, "later"), true],
    ];
    for (const [error, retryable] of cases) {
      const mock = new MockLanguageModelV3({ doStream: streamOf([...textParts(["par"]), { type: "error", error }]) });
      const seen: string[] = [];
      const err = await modelError(aiSdkModel(mock).generate(request({ onChunk: (t) => seen.push(t) })));
      expect(err.retryable, err.message).toBe(retryable);
      expect(seen).toEqual(["par"]);
    }
  });

  it("a stream that ends before its finish part is a retryable error", async () => {
    const mock = new MockLanguageModelV3({ doStream: streamOf(textParts(["par"])) });
    const err = await modelError(aiSdkModel(mock).generate(request()));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain("before its finish part");
  });

  it("a conversation that cannot be sent (a tool message without its call id) fails without retry and without a call", async () => {
    const mock = new MockLanguageModelV3();
    const err = await modelError(aiSdkModel(mock).generate(request({ messages: [{ role: "tool", content: "x" }] })));
    expect(err.retryable).toBe(false);
    expect(mock.doStreamCalls).toHaveLength(0);
  });

  it("stops on the caller's abort without retry and on its timeout with retry, even when the provider ignores the signal", async () => {
    // A provider that never answers and never looks at abortSignal.
    const stalled = new MockLanguageModelV3({ doStream: () => new Promise(() => {}) });
    const ac = new AbortController();
    const p = aiSdkModel(stalled, { timeoutMs: 10_000 }).generate(request({ signal: ac.signal }));
    setTimeout(() => ac.abort(), 20);
    const aborted = await modelError(p);
    expect(aborted.retryable).toBe(false);
    expect(aborted.message).toContain("aborted");

    const timedOut = await modelError(aiSdkModel(stalled, { timeoutMs: 100 }).generate(request()));
    expect(timedOut.retryable).toBe(true);
    expect(timedOut.message).toContain("no response within 100 ms");

    // A stream that stalls between parts: the timeout is the wait for the next part.
    const stalls = new MockLanguageModelV3({
      doStream: async () => ({
        stream: new ReadableStream<LanguageModelV3StreamPart>({
          start(c) {
            c.enqueue({ type: "text-start", id: "t" });
            c.enqueue({ type: "text-delta", id: "t", delta: "a" });
          },
        }),
      }),
    });
    const seen: string[] = [];
    const idle = await modelError(aiSdkModel(stalls, { timeoutMs: 150 }).generate(request({ onChunk: (t) => seen.push(t) })));
    expect(idle.retryable).toBe(true);
    expect(seen).toEqual(["a"]);
  }, 30_000);
});

describe("aiSdkModel() in a turn", () => {
  async function post(gh: ReturnType<typeof createGatehouse>, agentId: string, agent: string, input: unknown) {
    const r = await gh.fetch(new Request(`http://x/v1/agents/${agentId}/tasks`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent, input }),
    }));
    expect(r.status).toBeLessThan(300);
  }

  it("tool call to the host, tool result back as a tool-result part, streamed answer stored as chunk events, usage and cost per step", async () => {
    const lookups: string[] = [];
    const lookup = defineTool({
      name: "lookup",
      description: "Find a customer by email",
      parameters: z.object({ email: z.string() }),
      execute: ({ email }) => {
        lookups.push(email);
        return { customerId: 42 };
      },
    });
    const mock = new MockLanguageModelV3({
      doStream: [
        streamOf([
          { type: "tool-call", toolCallId: "call_lookup", toolName: "lookup", input: '{"email":"a@b.c"}' },
          { type: "finish", usage: usage(100, 20), finishReason: toolCalls },
        ]),
        streamOf([
          ...textParts(["Customer ", "42 ", "found."]),
          { type: "tool-call", toolCallId: "call_submit", toolName: "submit_result", input: '{"result":{"customerId":42}}' },
          { type: "finish", usage: usage(150, 30), finishReason: toolCalls },
        ]),
      ],
    });
    const agent = defineAgent({
      name: "support",
      instructions: "Help the customer.",
      model: aiSdkModel(mock, { pricing: { inputPerMTok: 1, outputPerMTok: 4 } }),
      tools: [lookup],
    });
    const gh = createGatehouse({ agents: [agent] });
    try {
      await post(gh, "c1", "support", "Who is a@b.c?");
      await gh.drain();
      const head = await gh.store.getAgent("c1");
      expect(head!.state).toBe("done");
      expect((head!.snapshot as any).context.output).toEqual({ customerId: 42 });
      expect(lookups).toEqual(["a@b.c"]);
      expect(mock.doStreamCalls).toHaveLength(2);
      expect(mock.doStreamCalls[0]!.tools!.map((t) => t.name)).toEqual(["lookup", "submit_result"]);
      expect(mock.doStreamCalls[1]!.prompt.slice(2)).toEqual([
        { role: "assistant", content: [{ type: "tool-call", toolCallId: "call_lookup", toolName: "lookup", input: { email: "a@b.c" } }] },
        {
          role: "tool",
          content: [{ type: "tool-result", toolCallId: "call_lookup", toolName: "lookup", output: { type: "text", value: JSON.stringify({ customerId: 42 }) } }],
        },
      ]);
      const events = await gh.store.readEvents("c1", 0, 500);
      const chunks = events.filter((e) => e.type === "chunk").map((e) => e.data.text).join("");
      expect(chunks).toBe("Customer 42 found.");
      const completed = events.filter((e) => e.type === "step" && e.data.phase === "completed");
      expect(completed.map((e) => e.data.llmUsage)).toEqual([
        { inputTokens: 100, outputTokens: 20 },
        { inputTokens: 150, outputTokens: 30 },
      ]);
      expect(completed[1]!.data.llmResponseCost as number).toBeCloseTo((150 + 120) / 1e6, 12);
      expect(completed[0]!.data.model).toBe("mock-model-id");
    } finally {
      await gh.close();
    }
  });
});
