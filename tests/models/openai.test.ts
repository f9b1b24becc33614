import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, ModelError, openaiCompatible } from "../../mod.ts";
import type { Message, ModelRequest, OpenAICompatibleOptions } from "../../mod.ts";
import type { ToolSpec } from "../../tools/specs.ts";
import { apiError, chunk, completion, type FakeOpenAI, startFakeOpenAI, usageChunk } from "../helpers/fake-openai.ts";

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

let fake: FakeOpenAI;
beforeEach(async () => {
  fake = await startFakeOpenAI();
});
afterEach(async () => {
  await fake.close();
});

const model = (over: Partial<OpenAICompatibleOptions> = {}) =>
  openaiCompatible({ baseURL: fake.baseURL, apiKey: "sk-test-secret-key", model: "test-model", ...over });

describe("openaiCompatible() request", () => {
  it("posts to <baseURL>/chat/completions with bearer auth, model, options and extra headers", async () => {
    fake.enqueue({ kind: "json", body: completion({ text: "ok" }) });
    await model({ baseURL: fake.baseURL + "//", temperature: 0.2, maxTokens: 64, headers: { "x-extra": "1" } })
      .generate(request());
    const r = fake.requests[0];
    expect(r.method).toBe("POST");
    expect(r.path).toBe("/v1/chat/completions");
    expect(r.headers.authorization).toBe("Bearer sk-test-secret-key");
    expect(r.headers["content-type"]).toBe("application/json");
    expect(r.headers["x-extra"]).toBe("1");
    expect(r.body).toEqual({
      model: "test-model",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hi" }],
      temperature: 0.2,
      max_tokens: 64,
    });
  });

  it("sends no authorization header, tools or tool_choice when there is no key and no tool", async () => {
    fake.enqueue({ kind: "json", body: completion({ text: "ok" }) });
    await model({ apiKey: undefined }).generate(request());
    const r = fake.requests[0];
    expect(r.headers.authorization).toBeUndefined();
    expect("tools" in r.body).toBe(false);
    expect("tool_choice" in r.body).toBe(false);
  });

  it("maps assistant tool calls and tool results to the chat-completions message shape and sends the tools", async () => {
    fake.enqueue({ kind: "json", body: completion({ text: "done" }) });
    const messages: Message[] = [
      { role: "system", content: "sys" },
      { role: "user", content: "find a@b.c" },
      { role: "assistant", content: "", toolCalls: [{ id: "call_1", name: "lookup", args: { email: "a@b.c" } }] },
      { role: "tool", toolCallId: "call_1", content: '{"id":7}' },
      { role: "assistant", content: "Checking", toolCalls: [{ id: "call_2", name: "lookup", args: "{broken" }] },
      { role: "tool", toolCallId: "call_2", content: "error" },
      { role: "assistant", content: "" },
    ];
    await model().generate(request({ messages, tools: [LOOKUP_SPEC] }));
    const body = fake.requests[0].body;
    expect(body.tools).toEqual([LOOKUP_SPEC]);
    expect(body.tool_choice).toBe("auto");
    expect(body.messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "find a@b.c" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: '{"email":"a@b.c"}' } }],
      },
      { role: "tool", tool_call_id: "call_1", content: '{"id":7}' },
      {
        role: "assistant",
        content: "Checking",
        // Unparsable arguments kept as a string are sent back as valid JSON.
        tool_calls: [{ id: "call_2", type: "function", function: { name: "lookup", arguments: '"{broken"' } }],
      },
      { role: "tool", tool_call_id: "call_2", content: "error" },
      { role: "assistant", content: "" },
    ]);
    for (const m of body.messages) if (m.tool_calls) for (const c of m.tool_calls) JSON.parse(c.function.arguments);
  });

  it("keeps a query string of the base URL (e.g. api-version) after the path", async () => {
    fake.enqueue({ kind: "json", body: completion({ text: "ok" }) });
    await model({ baseURL: fake.baseURL + "/?api-version=2024-10-21" }).generate(request());
    expect(fake.requests[0].path).toBe("/v1/chat/completions?api-version=2024-10-21");
  });

  it("rejects bad options with a TypeError naming the option", () => {
    expect(() => openaiCompatible({ baseURL: "not a url", model: "m" })).toThrow(/baseURL/);
    expect(() => openaiCompatible({ baseURL: "ftp://x/v1", model: "m" })).toThrow(/http or https/);
    expect(() => openaiCompatible({ baseURL: "http://x/v1", model: "" })).toThrow(/model/);
    expect(() => openaiCompatible({ baseURL: "http://x/v1", model: "m", maxTokens: 0 })).toThrow(/maxTokens/);
    expect(() => openaiCompatible({ baseURL: "http://x/v1", model: "m", timeoutMs: -1 })).toThrow(/timeoutMs/);
    expect(() => openaiCompatible({ baseURL: "http://x/v1", model: "m", pricing: { inputPerMTok: -1, outputPerMTok: 1 } }))
      .toThrow(/pricing/);
    expect(() => openaiCompatible({ baseURL: "http://x/v1", model: "m", temperature: Number.NaN })).toThrow(TypeError);
  });
});

describe("openaiCompatible() response", () => {
  it("returns the message content as text", async () => {
    fake.enqueue({ kind: "json", body: completion({ text: "Hello there" }) });
    const res = await model().generate(request());
    expect(res).toEqual({ text: "Hello there" });
  });

  it("returns tool calls with their arguments parsed and empty arguments as {}", async () => {
    fake.enqueue({
      kind: "json",
      body: completion({
        toolCalls: [
          { id: "call_a", name: "lookup", arguments: '{"email":"a@b.c"}' },
          { id: "call_b", name: "ping", arguments: "" },
        ],
      }),
    });
    const res = await model().generate(request({ tools: [LOOKUP_SPEC] }));
    expect(res.text).toBeUndefined();
    expect(res.toolCalls).toEqual([
      { id: "call_a", name: "lookup", args: { email: "a@b.c" } },
      { id: "call_b", name: "ping", args: {} },
    ]);
  });

  it("passes unparsable arguments on as their raw text instead of throwing", async () => {
    fake.enqueue({ kind: "json", body: completion({ toolCalls: [{ id: "c1", name: "lookup", arguments: '{"email": "a@b' }] }) });
    const res = await model().generate(request({ tools: [LOOKUP_SPEC] }));
    expect(res.toolCalls).toEqual([{ id: "c1", name: "lookup", args: '{"email": "a@b' }]);
  });

  it("reports token usage and computes the cost from per-million prices", async () => {
    fake.enqueue({ kind: "json", body: completion({ text: "x", usage: { prompt: 1200, completion: 300 } }) });
    const res = await model({ pricing: { inputPerMTok: 2.5, outputPerMTok: 10 } }).generate(request());
    expect(res.usage).toEqual({ inputTokens: 1200, outputTokens: 300 });
    expect(res.cost).toBeCloseTo((1200 * 2.5 + 300 * 10) / 1e6, 12);
  });

  it("leaves cost out without pricing and usage out when the server sends none", async () => {
    fake.enqueue(
      { kind: "json", body: completion({ text: "x", usage: { prompt: 5, completion: 6 } }) },
      { kind: "json", body: completion({ text: "y" }) },
    );
    const m = model();
    const a = await m.generate(request());
    expect(a.usage).toEqual({ inputTokens: 5, outputTokens: 6 });
    expect(a.cost).toBeUndefined();
    const b = await model({ pricing: { inputPerMTok: 1, outputPerMTok: 1 } }).generate(request());
    expect(b.usage).toBeUndefined();
    expect(b.cost).toBeUndefined();
  });
});

describe("openaiCompatible() errors", () => {
  it("turns 429 into a retryable error with the server message and Retry-After", async () => {
    fake.enqueue(apiError(429, "Rate limit reached for requests", { "retry-after": "7" }));
    const err = await modelError(model().generate(request()));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain("HTTP 429");
    expect(err.message).toContain("Rate limit reached for requests");
    expect(err.message).toContain("Retry-After: 7");
  });

  it("turns 500 and 503 into retryable errors", async () => {
    fake.enqueue(apiError(500, "The server had an error"), { kind: "raw", status: 503, body: "upstream overloaded" });
    const a = await modelError(model().generate(request()));
    expect(a.retryable).toBe(true);
    expect(a.message).toContain("The server had an error");
    const b = await modelError(model().generate(request()));
    expect(b.retryable).toBe(true);
    expect(b.message).toContain("upstream overloaded");
  });

  it("turns 400 and 401 into non-retryable errors that never contain the API key", async () => {
    fake.enqueue(
      apiError(400, "Invalid value for 'tools'"),
      apiError(401, "Incorrect API key provided: sk-test-secret-key"),
    );
    const a = await modelError(model().generate(request()));
    expect(a.retryable).toBe(false);
    expect(a.message).toContain("HTTP 400");
    expect(a.message).toContain("Invalid value for 'tools'");
    const b = await modelError(model().generate(request()));
    expect(b.retryable).toBe(false);
    expect(b.message).toContain("HTTP 401");
    expect(b.message).toContain("Incorrect API key provided");
    expect(b.message).not.toContain("sk-test-secret-key");
  });

  it("reads Ollama-style { error: string } bodies", async () => {
    fake.enqueue({ kind: "json", status: 404, body: { error: 'model "llama9" not found' } });
    const err = await modelError(model().generate(request()));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain('model "llama9" not found');
  });

  it("fails without retry when the body has no choices or is not JSON", async () => {
    fake.enqueue({ kind: "json", body: { id: "x", object: "chat.completion", choices: [] } }, { kind: "raw", body: "<html>" });
    const a = await modelError(model().generate(request()));
    expect(a.retryable).toBe(false);
    expect(a.message).toContain("no choices");
    const b = await modelError(model().generate(request()));
    expect(b.retryable).toBe(false);
    expect(b.message).toContain("not JSON");
  });

  it("surfaces an error object sent with status 200, retryable by its code", async () => {
    fake.enqueue({ kind: "json", body: { error: { message: "Provider returned error", code: 502 } } });
    const err = await modelError(model().generate(request()));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain("Provider returned error");
  });

  it("times out a server that does not answer, as a retryable error", async () => {
    fake.enqueue({ kind: "hang" });
    const started = Date.now();
    const err = await modelError(model({ timeoutMs: 150 }).generate(request()));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain("no response within 150 ms");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("turns a dropped connection into a retryable network error", async () => {
    fake.enqueue({ kind: "destroy" });
    const err = await modelError(model().generate(request()));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain("network error");
  });

  it("stops when the caller's signal aborts, without retry", async () => {
    fake.enqueue({ kind: "hang" });
    const ac = new AbortController();
    const p = model({ timeoutMs: 10_000 }).generate(request({ signal: ac.signal }));
    setTimeout(() => ac.abort(), 50);
    const err = await modelError(p);
    expect(err.retryable).toBe(false);
    expect(err.message).toContain("aborted");
  });

  it("aborts and times out the same way on runtimes without AbortSignal.any", async () => {
    const saved = Object.getOwnPropertyDescriptor(AbortSignal, "any");
    Object.defineProperty(AbortSignal, "any", { value: undefined, configurable: true, writable: true });
    try {
      fake.enqueue({ kind: "hang" }, { kind: "hang" }, { kind: "json", body: completion({ text: "ok" }) });
      const ac = new AbortController();
      const p = model({ timeoutMs: 10_000 }).generate(request({ signal: ac.signal }));
      setTimeout(() => ac.abort(), 50);
      const aborted = await modelError(p);
      expect(aborted.retryable).toBe(false);
      expect(aborted.message).toContain("aborted");
      const timedOut = await modelError(model({ timeoutMs: 100 }).generate(request()));
      expect(timedOut.retryable).toBe(true);
      expect(timedOut.message).toContain("no response within 100 ms");
      expect((await model().generate(request())).text).toBe("ok");
    } finally {
      if (saved) Object.defineProperty(AbortSignal, "any", saved);
      else delete (AbortSignal as { any?: unknown }).any;
    }
  });

  it("does not call the server when the signal is already aborted", async () => {
    const ac = new AbortController();
    ac.abort();
    const err = await modelError(model().generate(request({ signal: ac.signal })));
    expect(err.retryable).toBe(false);
    expect(fake.requests).toHaveLength(0);
  });
});

describe("openaiCompatible() streaming", () => {
  it("asks for a stream with usage and delivers text deltas to onChunk in order", async () => {
    fake.enqueue({
      kind: "stream",
      chunks: [
        chunk({ role: "assistant", content: "" }),
        chunk({ content: "Hel" }),
        chunk({ content: "lo, " }),
        chunk({ content: "world" }),
        chunk({}, "stop"),
        usageChunk(11, 3),
      ],
    });
    const seen: string[] = [];
    const res = await model({ stream: true, pricing: { inputPerMTok: 1, outputPerMTok: 2 } })
      .generate(request({ onChunk: (t) => seen.push(t) }));
    expect(fake.requests[0].body.stream).toBe(true);
    expect(fake.requests[0].body.stream_options).toEqual({ include_usage: true });
    expect(fake.requests[0].headers.accept).toBe("text/event-stream");
    expect(seen).toEqual(["Hel", "lo, ", "world"]);
    expect(res.text).toBe("Hello, world");
    expect(res.usage).toEqual({ inputTokens: 11, outputTokens: 3 });
    expect(res.cost).toBeCloseTo((11 + 6) / 1e6, 12);
  });

  it("assembles tool call deltas by index", async () => {
    fake.enqueue({
      kind: "stream",
      chunks: [
        chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "lookup", arguments: "" } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"em' } }] }),
        chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "lookup", arguments: '{"email"' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: 'ail":"a@b.c"}' } }] }),
        chunk({ tool_calls: [{ index: 1, function: { arguments: ':"d@e.f"}' } }] }),
        chunk({}, "tool_calls"),
        usageChunk(20, 9),
      ],
    });
    const res = await model({ stream: true }).generate(request({ tools: [LOOKUP_SPEC] }));
    expect(res.toolCalls).toEqual([
      { id: "call_a", name: "lookup", args: { email: "a@b.c" } },
      { id: "call_b", name: "lookup", args: { email: "d@e.f" } },
    ]);
    expect(res.text).toBeUndefined();
    expect(res.usage).toEqual({ inputTokens: 20, outputTokens: 9 });
  });

  it("parses events split at arbitrary byte boundaries, CRLF line ends and multi-byte text", async () => {
    const events = [chunk({ content: "Grüße " }), chunk({ content: "🙂" }), chunk({}, "stop"), usageChunk(1, 2)];
    const wire = ": comment\r\n\r\n" + events.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join("") + "data: [DONE]\r\n\r\n";
    const bytes = new TextEncoder().encode(wire);
    const fetchSplit: typeof fetch = async () => {
      let at = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          if (at >= bytes.length) return c.close();
          const n = 1 + (at % 3);
          c.enqueue(bytes.slice(at, at + n));
          at += n;
        },
      });
      return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
    };
    const seen: string[] = [];
    const res = await openaiCompatible({ baseURL: "http://model.invalid/v1", model: "m", stream: true, fetch: fetchSplit })
      .generate(request({ onChunk: (t) => seen.push(t) }));
    expect(seen).toEqual(["Grüße ", "🙂"]);
    expect(res.text).toBe("Grüße 🙂");
    expect(res.usage).toEqual({ inputTokens: 1, outputTokens: 2 });
  });

  it("fails retryably when the stream ends before [DONE] or a finish reason", async () => {
    fake.enqueue({ kind: "stream", chunks: [chunk({ content: "par" })], done: false });
    const err = await modelError(model({ stream: true }).generate(request()));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain("before [DONE]");
  });

  it("fails without retry on a chunk that is not JSON", async () => {
    fake.enqueue({ kind: "stream", chunks: [chunk({ content: "a" }), "{oops"] });
    const err = await modelError(model({ stream: true }).generate(request()));
    expect(err.retryable).toBe(false);
    expect(err.message).toContain("not JSON");
  });

  it("accepts a plain JSON answer from a server that ignores stream: true", async () => {
    fake.enqueue({ kind: "json", body: completion({ text: "whole", usage: { prompt: 2, completion: 1 } }) });
    const seen: string[] = [];
    const res = await model({ stream: true }).generate(request({ onChunk: (t) => seen.push(t) }));
    expect(res.text).toBe("whole");
    expect(seen).toEqual(["whole"]);
  });

  it("times out a stream that stalls between chunks", async () => {
    fake.enqueue({ kind: "stream", chunks: [chunk({ content: "a" }), chunk({ content: "b" })], delayMs: 2_000 });
    const err = await modelError(model({ stream: true, timeoutMs: 200 }).generate(request()));
    expect(err.retryable).toBe(true);
    expect(err.message).toContain("no response within 200 ms");
  });
});

describe("openaiCompatible() end to end", () => {
  async function post(gh: ReturnType<typeof createGatehouse>, agentId: string, agent: string, input: unknown) {
    const r = await gh.fetch(new Request(`http://x/v1/agents/${agentId}/tasks`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent, input }),
    }));
    expect(r.status).toBeLessThan(300);
    return (await r.json()) as { turnId: string };
  }

  it("runs a turn: tool call, tool result sent back as a tool message, submit_result, step usage", async () => {
    const lookups: string[] = [];
    const lookup = defineTool({
      name: "lookup",
      description: "Find a customer by email",
      parameters: z.object({ email: z.string() }),
      execute: ({ email }) => {
        lookups.push(email);
        return { customerId: 42, plan: "pro" };
      },
    });
    fake.script = (_req, i) => {
      if (i === 0) {
        return {
          kind: "json",
          body: completion({ toolCalls: [{ id: "call_lookup", name: "lookup", arguments: '{"email":"a@b.c"}' }], usage: { prompt: 100, completion: 20 } }),
        };
      }
      return {
        kind: "json",
        body: completion({
          text: "Found it.",
          toolCalls: [{ id: "call_submit", name: "submit_result", arguments: '{"result":{"customerId":42}}' }],
          usage: { prompt: 150, completion: 30 },
        }),
      };
    };
    const agent = defineAgent({
      name: "support",
      instructions: "Help the customer.",
      model: model({ pricing: { inputPerMTok: 1, outputPerMTok: 4 } }),
      tools: [lookup],
    });
    const gh = createGatehouse({ agents: [agent] });
    try {
      await post(gh, "cust-1", "support", "Who is a@b.c?");
      await gh.drain();
      const head = await gh.store.getAgent("cust-1");
      expect(head!.state).toBe("done");
      expect((head!.snapshot as any).context.output).toEqual({ customerId: 42 });
      expect(lookups).toEqual(["a@b.c"]);

      expect(fake.requests).toHaveLength(2);
      const first = fake.requests[0].body;
      expect(first.messages).toEqual([
        { role: "system", content: "Help the customer." },
        { role: "user", content: "Who is a@b.c?" },
      ]);
      expect(first.tools.map((t: ToolSpec) => t.function.name)).toEqual(["lookup", "submit_result"]);
      const second = fake.requests[1].body;
      expect(second.messages.slice(2)).toEqual([
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "call_lookup", type: "function", function: { name: "lookup", arguments: '{"email":"a@b.c"}' } }],
        },
        { role: "tool", tool_call_id: "call_lookup", content: JSON.stringify({ customerId: 42, plan: "pro" }) },
      ]);

      const events = await gh.store.readEvents("cust-1", 0, 500);
      const completed = events.filter((e) => e.type === "step" && e.data.phase === "completed");
      expect(completed.map((e) => e.data.llmUsage)).toEqual([
        { inputTokens: 100, outputTokens: 20 },
        { inputTokens: 150, outputTokens: 30 },
      ]);
      expect(completed[0].data.llmResponseCost as number).toBeCloseTo((100 + 80) / 1e6, 12);
      expect(completed[0].data.model).toBe("test-model");
    } finally {
      await gh.close();
    }
  });

  it("answers unparsable tool arguments with an invalid_arguments tool message, even for a tool with defaults", async () => {
    let ran = 0;
    const search = defineTool({
      name: "search",
      description: "Search the docs",
      parameters: z.object({ query: z.string(), limit: z.number() }),
      defaults: { query: "everything", limit: 5 },
      execute: () => {
        ran++;
        return [];
      },
    });
    fake.script = (_req, i) =>
      i === 0
        ? { kind: "json", body: completion({ toolCalls: [{ id: "call_bad", name: "search", arguments: '{"query": "refund' }] }) }
        : { kind: "json", body: completion({ toolCalls: [{ id: "call_done", name: "submit_result", arguments: '{"result":"gave up"}' }] }) };
    const agent = defineAgent({ name: "docs", instructions: "Search.", model: model(), tools: [search] });
    const gh = createGatehouse({ agents: [agent] });
    try {
      await post(gh, "d1", "docs", "find refunds");
      await gh.drain();
      expect((await gh.store.getAgent("d1"))!.state).toBe("done");
      expect(ran).toBe(0);
      const toolMsg = fake.requests[1].body.messages.find((m: any) => m.role === "tool" && m.tool_call_id === "call_bad");
      expect(toolMsg).toBeDefined();
      const parsed = JSON.parse(toolMsg.content);
      expect(parsed.error.type).toBe("invalid_arguments");
      expect(parsed.error.message).toContain('"search"');
      const results = (await gh.store.readEvents("d1", 0, 500)).filter((e) => e.type === "tool_result");
      expect(results.map((e) => (e.data.outcome as any).error?.type)).toEqual(["invalid_arguments"]);
    } finally {
      await gh.close();
    }
  });

  it("fails the turn at once on a non-retryable model error and retries a retryable one", async () => {
    fake.enqueue(
      apiError(503, "busy"),
      { kind: "json", body: completion({ toolCalls: [{ id: "c1", name: "submit_result", arguments: '{"result":1}' }] }) },
      apiError(400, "bad request"),
    );
    const a = defineAgent({ name: "flaky", instructions: "x", model: model(), tools: [] });
    const gh = createGatehouse({ agents: [a] });
    try {
      await post(gh, "f1", "flaky", "go");
      await gh.drain();
      expect((await gh.store.getAgent("f1"))!.state).toBe("done");
      expect(fake.requests).toHaveLength(2);

      await post(gh, "f2", "flaky", "go");
      await gh.drain();
      const head = await gh.store.getAgent("f2");
      expect(head!.state).toBe("failed");
      expect(fake.requests).toHaveLength(3);
      expect((head!.snapshot as any).context.error.message).toContain("bad request");
    } finally {
      await gh.close();
    }
  });
});
