/**
 * Any model, any tool, together: an agent whose model is an AI SDK language
 * model (the SDK's own `MockLanguageModelV3`, and `@ai-sdk/anthropic`
 * against a local server speaking the Messages API) and whose tools are
 * `await mcpTools({ url })` of a real MCP server (the SDK's own server over
 * Streamable HTTP) calls the server's tool, sees its result and ends `done`,
 * on the memory store and on Redis.
 */
import { createAnthropic } from "@ai-sdk/anthropic";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { aiSdkModel } from "@gatehouse-runtime/core/ai-sdk";
import { mcpTools } from "@gatehouse-runtime/core/mcp";
import { createGatehouse, defineAgent, type Model } from "@gatehouse-runtime/core";
import type { Store } from "../../store/port.ts";
import { redisStore } from "../../store/redis.ts";
import { messageStream, startFakeAnthropic, type FakeAnthropic } from "../helpers/fake-anthropic.ts";
import { startMcpServer, type TestMcpServer } from "../helpers/mcp-server.ts";
import { useRedisServer } from "../helpers/redis.ts";

const redis = useRedisServer({}, 60_000);
let mcp: TestMcpServer;
let fake: FakeAnthropic;
beforeAll(async () => {
  [mcp, fake] = await Promise.all([startMcpServer(), startFakeAnthropic()]);
}, 60_000);
afterAll(async () => {
  await Promise.all([mcp?.stop(), fake?.close()]);
});

let n = 0;
const STORES: Record<string, () => Store | undefined> = {
  memory: () => undefined,
  redis: () => redisStore({ url: redis.url, prefix: `aimcp${++n}` }),
};

const usage = { inputTokens: { total: 9, noCache: 9, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 3, text: 3, reasoning: undefined } };

/** A mock model: step 1 calls `add`, step 2 submits what the tool result said (read from the prompt it was given). */
function mockModel(prompts: unknown[]): Model {
  let step = 0;
  const mock = new MockLanguageModelV3({
    doStream: async (options) => {
      step++;
      prompts.push(options.prompt);
      const chunks = step === 1
        ? [{ type: "tool-call" as const, toolCallId: "call_add", toolName: "add", input: JSON.stringify({ a: 2, b: 3 }) }]
        : [
          { type: "text-start" as const, id: "t" },
          { type: "text-delta" as const, id: "t", delta: "The sum is 5." },
          { type: "text-end" as const, id: "t" },
          { type: "tool-call" as const, toolCallId: "call_submit", toolName: "submit_result", input: JSON.stringify({ result: toolResultOf(options.prompt) }) },
        ];
      return { stream: simulateReadableStream({ chunks: [...chunks, { type: "finish" as const, usage, finishReason: { unified: "tool-calls" as const, raw: "tool_calls" } }] }) };
    },
  });
  return aiSdkModel(mock);
}

/** The value of the first tool result in an AI SDK prompt. */
function toolResultOf(prompt: Array<{ role: string; content: unknown }>): unknown {
  for (const m of prompt) {
    if (m.role !== "tool" || !Array.isArray(m.content)) continue;
    const part = m.content.find((p: { type: string }) => p.type === "tool-result") as { output: { type: string; value: unknown } } | undefined;
    if (part) return part.output.type === "json" ? part.output.value : JSON.parse(String(part.output.value));
  }
  throw new Error("no tool result in the prompt");
}

async function runTurn(model: Model, store: Store | undefined, agentId: string) {
  const tools = await mcpTools({ url: mcp.url, allow: ["add"] });
  const agent = defineAgent({ name: "adder", instructions: "Add the numbers with the add tool, then submit the sum.", model, tools });
  const gh = createGatehouse({ agents: [agent], ...(store ? { store } : {}) });
  try {
    const accepted = await gh.fetch(new Request(`http://local/v1/agents/${agentId}/tasks`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent: "adder", input: "2 + 3" }),
    }));
    expect(accepted.status).toBe(202);
    await gh.drain();
    const view = await (await gh.fetch(new Request(`http://local/v1/agents/${agentId}`))).json() as { state: string; output: unknown };
    const events = await gh.store.readEvents(agentId, 0, 500);
    return { view, events };
  } finally {
    await gh.close();
    await tools.close();
  }
}

describe.each(Object.keys(STORES))("an AI SDK model with MCP tools on %s", (storeName) => {
  it("MockLanguageModelV3: calls the server's add tool, sees { sum: 5 } and ends done", async () => {
    const before = mcp.calls.length;
    const prompts: unknown[] = [];
    const { view, events } = await runTurn(mockModel(prompts), STORES[storeName]!(), `mock-${storeName}`);
    expect(view.state).toBe("done");
    expect(view.output).toEqual({ sum: 5 });
    expect(mcp.calls.slice(before)).toEqual(["add"]);
    expect(events.filter((e) => e.type === "tool_result").map((e) => e.data.outcome)).toEqual([{ ok: true, value: { sum: 5 } }]);
    expect(events.filter((e) => e.type === "chunk").map((e) => e.data.text).join("")).toBe("The sum is 5.");
    expect(prompts).toHaveLength(2);
  }, 60_000);

  it("@ai-sdk/anthropic against a local Messages server: the same turn over the wire", async () => {
    const before = mcp.calls.length;
    const from = fake.requests.length;
    fake.enqueue(
      messageStream([{ type: "tool_use", id: "toolu_add", name: "add", input: { a: 2, b: 3 } }]),
      messageStream([{ type: "text", text: ["The sum ", "is 5."] }, { type: "tool_use", id: "toolu_submit", name: "submit_result", input: { result: { sum: 5 } } }]),
    );
    const model = aiSdkModel(createAnthropic({ baseURL: fake.baseURL, apiKey: "sk-ant-test" })("claude-test-1"));
    const { view, events } = await runTurn(model, STORES[storeName]!(), `anthropic-${storeName}`);
    expect(view.state).toBe("done");
    expect(view.output).toEqual({ sum: 5 });
    expect(mcp.calls.slice(before)).toEqual(["add"]);
    // The tool went to Anthropic with the MCP server's own input schema, and its result came back as a tool_result block.
    const [first, second] = fake.requests.slice(from).map((r) => r.body as { tools: Array<{ name: string; input_schema: { properties: Record<string, unknown> } }>; messages: Array<{ role: string; content: unknown }> });
    expect(first!.tools.find((t) => t.name === "add")!.input_schema.properties).toHaveProperty("a");
    const toolResult = second!.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((c: { type: string }) => c.type === "tool_result") as { content: unknown };
    expect(JSON.stringify(toolResult.content)).toContain('\\"sum\\":5');
    expect(events.filter((e) => e.type === "chunk").map((e) => e.data.text).join("")).toBe("The sum is 5.");
  }, 60_000);
});
