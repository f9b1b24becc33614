/**
 * aiSdkModel() over real provider packages: `@ai-sdk/openai-compatible` and
 * `@ai-sdk/anthropic`, each pointed at a local server speaking its API's
 * wire format (chat completions with `data:` server-sent events,
 * tests/helpers/fake-openai.ts; Anthropic Messages with `message_start` /
 * `content_block_*` / `message_delta` events, tests/helpers/fake-anthropic.ts).
 * Each provider runs the same turns through the host, on the memory store and
 * on Redis (a real redis-server): a tool call answered in process and sent
 * back in the provider's format, a streamed answer stored as `chunk` events,
 * a 429 the host retries, a 400 that fails the turn without a retry.
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { aiSdkModel } from "@gatehouse-runtime/core/ai-sdk";
import { createGatehouse, defineAgent, defineTool, type Model, type Store } from "@gatehouse-runtime/core";
import { redisStore } from "@gatehouse-runtime/core/redis";
import { anthropicError, messageStream } from "../helpers/fake-anthropic.ts";
import { apiError, chunk, type FakeOpenAI, type FakeReply, startFakeOpenAI, usageChunk } from "../helpers/fake-openai.ts";
import { useRedisServer } from "../helpers/redis.ts";

const T = 60_000;

/** One provider: its model on a fake server, and the replies of each scenario in its wire format. */
interface Provider {
  model(baseURL: string): Model;
  toolCall(id: string, name: string, args: Record<string, unknown>, usage: { input: number; output: number }): FakeReply;
  answer(pieces: string[], submit: { id: string; result: unknown }, usage: { input: number; output: number }): FakeReply;
  rateLimited: FakeReply;
  badRequest: FakeReply;
  /** The tool result as the second request carries it. */
  toolResultIn(body: any): { id: string; content: string };
}

const openaiChunks = {
  toolCall(id: string, name: string, args: Record<string, unknown>): unknown[] {
    const json = JSON.stringify(args);
    return [
      chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: "" } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: json.slice(0, 5) } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: json.slice(5) } }] }),
    ];
  },
};

const PROVIDERS: Record<string, Provider> = {
  "openai-compatible": {
    model: (baseURL) =>
      aiSdkModel(createOpenAICompatible({ name: "fake", baseURL, apiKey: "sk-test", includeUsage: true })("test-model"), {
        pricing: { inputPerMTok: 1, outputPerMTok: 4 },
      }),
    toolCall: (id, name, args, u) => ({
      kind: "stream",
      chunks: [...openaiChunks.toolCall(id, name, args), chunk({}, "tool_calls"), usageChunk(u.input, u.output)],
    }),
    answer: (pieces, submit, u) => ({
      kind: "stream",
      chunks: [
        chunk({ role: "assistant", content: "" }),
        ...pieces.map((content) => chunk({ content })),
        ...openaiChunks.toolCall(submit.id, "submit_result", { result: submit.result }),
        chunk({}, "tool_calls"),
        usageChunk(u.input, u.output),
      ],
    }),
    rateLimited: apiError(429, "Rate limit reached for requests", { "retry-after": "1" }),
    badRequest: apiError(400, "Invalid value for 'tools'"),
    toolResultIn: (body) => {
      const m = body.messages.find((x: any) => x.role === "tool");
      return { id: m.tool_call_id, content: m.content };
    },
  },
  anthropic: {
    model: (baseURL) =>
      aiSdkModel(createAnthropic({ baseURL, apiKey: "sk-ant-test" })("claude-test-1"), { pricing: { inputPerMTok: 1, outputPerMTok: 4 } }),
    toolCall: (id, name, args, u) => messageStream([{ type: "tool_use", id, name, input: args }], u),
    answer: (pieces, submit, u) =>
      messageStream([{ type: "text", text: pieces }, { type: "tool_use", id: submit.id, name: "submit_result", input: { result: submit.result } }], u),
    rateLimited: anthropicError(429, "rate_limit_error", "Number of request tokens has exceeded your rate limit", { "retry-after": "1" }),
    badRequest: anthropicError(400, "invalid_request_error", "messages: roles must alternate"),
    toolResultIn: (body) => {
      for (const m of body.messages) {
        if (m.role !== "user" || !Array.isArray(m.content)) continue;
        const b = m.content.find((c: any) => c.type === "tool_result");
        if (b) return { id: b.tool_use_id, content: typeof b.content === "string" ? b.content : b.content.map((c: any) => c.text).join("") };
      }
      throw new Error("no tool_result block");
    },
  },
};

const redis = useRedisServer({}, T);

let n = 0;
const STORES: Record<string, (() => Store) | undefined> = {
  memory: undefined,
  redis: () => redisStore({ url: redis.url, prefix: `aisdk${++n}` }),
};

for (const [providerName, provider] of Object.entries(PROVIDERS)) {
  for (const [storeName, openStore] of Object.entries(STORES)) {
    describe(`aiSdkModel() over @ai-sdk/${providerName} on ${storeName}`, () => {
      let fake: FakeOpenAI;
      let gh: ReturnType<typeof createGatehouse>;
      const lookups: string[] = [];
      beforeEach(async () => {
        fake = await startFakeOpenAI();
        lookups.length = 0;
        const lookup = defineTool({
          name: "lookup",
          description: "Find a customer by email",
          parameters: z.object({ email: z.string() }),
          execute: ({ email }) => {
            lookups.push(email);
            return { customerId: 42, plan: "pro" };
          },
        });
        const agent = defineAgent({ name: "support", instructions: "Help the customer.", model: provider.model(fake.baseURL), tools: [lookup] });
        gh = createGatehouse({ agents: [agent], ...(openStore ? { store: openStore() } : {}) });
      }, T);
      afterEach(async () => {
        await gh?.close();
        await fake?.close();
      });

      async function runTask(agentId: string, input: string) {
        const r = await gh.fetch(new Request(`http://x/v1/agents/${agentId}/tasks`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ agent: "support", input }),
        }));
        expect(r.status).toBe(202);
        await gh.drain();
        const head = await gh.store.getAgent(agentId);
        const events = await gh.store.readEvents(agentId, 0, 1000);
        return { head: head!, events };
      }

      it("a tool call runs in process and goes back in the provider's format; the answer streams into chunk events", async () => {
        fake.enqueue(
          provider.toolCall("call_lookup", "lookup", { email: "a@b.c" }, { input: 100, output: 20 }),
          provider.answer(["Customer ", "42 is ", "on pro."], { id: "call_submit", result: { customerId: 42 } }, { input: 150, output: 30 }),
        );
        const { head, events } = await runTask("c1", "Who is a@b.c?");
        expect(head.state).toBe("done");
        expect((head.snapshot as any).context.output).toEqual({ customerId: 42 });
        expect(lookups).toEqual(["a@b.c"]);
        expect(fake.requests).toHaveLength(2);
        expect(fake.requests[0]!.body.stream).toBe(true);
        expect(provider.toolResultIn(fake.requests[1]!.body)).toEqual({
          id: "call_lookup",
          content: JSON.stringify({ customerId: 42, plan: "pro" }),
        });
        const chunks = events.filter((e) => e.type === "chunk").map((e) => e.data.text).join("");
        expect(chunks).toBe("Customer 42 is on pro.");
        const completed = events.filter((e) => e.type === "step" && e.data.phase === "completed");
        expect(completed.map((e) => e.data.llmUsage)).toEqual([
          { inputTokens: 100, outputTokens: 20 },
          { inputTokens: 150, outputTokens: 30 },
        ]);
        expect(completed[0]!.data.llmResponseCost as number).toBeCloseTo((100 + 80) / 1e6, 12);
      }, T);

      it("a 429 is retried by the host and the turn completes", async () => {
        fake.enqueue(provider.rateLimited, provider.answer(["ok"], { id: "call_s", result: "fine" }, { input: 5, output: 1 }));
        const { head, events } = await runTask("r1", "go");
        expect(head.state).toBe("done");
        expect((head.snapshot as any).context.output).toBe("fine");
        expect(fake.requests).toHaveLength(2);
        const errors = events.filter((e) => e.type === "model_error");
        expect(errors).toHaveLength(1);
        expect(errors[0]!.data.message).toContain("HTTP 429");
        expect(errors[0]!.data.message).toContain("Retry-After: 1");
      }, T);

      it("a 400 fails the turn at once, without a retry, with the server's message", async () => {
        fake.enqueue(provider.badRequest, provider.answer(["never"], { id: "call_s", result: "no" }, { input: 1, output: 1 }));
        const { head, events } = await runTask("b1", "go");
        expect(head.state).toBe("failed");
        expect(fake.requests).toHaveLength(1);
        expect(events.filter((e) => e.type === "model_error")).toHaveLength(1);
        const message = (head.snapshot as any).context.error.message as string;
        expect(message).toContain("HTTP 400");
        expect(message).toMatch(/Invalid value for 'tools'|roles must alternate/);
      }, T);
    });
  }
}

describe("aiSdkModel() over @ai-sdk/anthropic: the stream itself", () => {
  let fake: FakeOpenAI;
  beforeEach(async () => {
    fake = await startFakeOpenAI();
  });
  afterEach(async () => {
    await fake.close();
  });
  const req = (onChunk?: (t: string) => void) => ({
    agentId: "a", turnId: "t", step: 1,
    messages: [{ role: "system" as const, content: "sys" }, { role: "user" as const, content: "hi" }],
    tools: [], signal: new AbortController().signal, ...(onChunk ? { onChunk } : {}),
  });

  it("posts to <baseURL>/messages with the system prompt apart and reads text deltas in order", async () => {
    fake.enqueue(messageStream([{ type: "text", text: ["Hel", "lo"] }], { input: 3, output: 2 }));
    const seen: string[] = [];
    const res = await PROVIDERS.anthropic!.model(fake.baseURL).generate(req((t) => seen.push(t)));
    expect(fake.requests[0]!.path).toBe("/v1/messages");
    expect(fake.requests[0]!.headers["x-api-key"]).toBe("sk-ant-test");
    expect(fake.requests[0]!.body.system).toEqual([{ type: "text", text: "sys" }]);
    expect(seen).toEqual(["Hel", "lo"]);
    expect(res).toMatchObject({ text: "Hello", usage: { inputTokens: 3, outputTokens: 2 } });
  });

  it("a 529 overloaded answer is retryable; a stream error event after the first block is classified by its type", async () => {
    fake.enqueue(anthropicError(529, "overloaded_error", "Overloaded"));
    const a = await PROVIDERS.anthropic!.model(fake.baseURL).generate(req()).then(() => null, (e) => e);
    expect(a?.retryable).toBe(true);
    const events = (messageStream([{ type: "text", text: ["par", "tial"] }], undefined, { stop: false }) as { events: Array<{ event: string; data: unknown }> }).events;
    fake.enqueue({ kind: "sse", events: [...events, { event: "error", data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } }] });
    const seen: string[] = [];
    const b = await PROVIDERS.anthropic!.model(fake.baseURL).generate(req((t) => seen.push(t))).then(() => null, (e) => e);
    expect(b?.retryable).toBe(true);
    expect(b?.message).toContain("Overloaded");
    expect(seen).toEqual(["par", "tial"]);
  });

  it("a stream cut before message_stop is a retryable error", async () => {
    fake.enqueue(messageStream([{ type: "text", text: ["cut"] }], undefined, { stop: false }));
    const err = await PROVIDERS.anthropic!.model(fake.baseURL).generate(req()).then(() => null, (e) => e);
    expect(err?.retryable).toBe(true);
  });
});
