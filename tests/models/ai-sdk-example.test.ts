/**
 * examples/ai-sdk.ts runs as written: its `main()` against a local server
 * speaking Anthropic's Messages API (tests/helpers/fake-anthropic.ts) — the
 * model looks the order up, reads the tool result, streams its answer and
 * submits — and the block of docs/models.md is the file's marked region.
 */
import { readFileSync } from "node:fs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { main } from "../../examples/ai-sdk.ts";
import { messageStream, startFakeAnthropic, type FakeAnthropic } from "../helpers/fake-anthropic.ts";

let fake: FakeAnthropic;
beforeEach(async () => {
  fake = await startFakeAnthropic();
});
afterEach(async () => {
  await fake.close();
});

describe("examples/ai-sdk.ts", () => {
  it("runs one task: lookup_order in process, the answer streamed, submit_result", async () => {
    fake.script = (req, i) => {
      if (i === 0) return messageStream([{ type: "tool_use", id: "toolu_1", name: "lookup_order", input: { orderId: "A-1001" } }], { input: 320, output: 40 });
      // The tool result comes back as a tool_result block; the answer quotes it.
      const result = req.body.messages.at(-1).content.find((c: any) => c.type === "tool_result");
      const { eta } = JSON.parse(typeof result.content === "string" ? result.content : result.content[0].text);
      return messageStream([
        { type: "text", text: ["Order A-1001 has shipped; ", `it arrives on ${eta}.`] },
        { type: "tool_use", id: "toolu_2", name: "submit_result", input: { result: { orderId: "A-1001", eta } } },
      ], { input: 400, output: 60 });
    };
    const out = await main({ ANTHROPIC_API_KEY: "sk-ant-test", ANTHROPIC_BASE_URL: fake.baseURL }, "Where is order A-1001?");
    expect(out).toEqual({
      state: "done",
      output: { orderId: "A-1001", eta: "2026-12-02" },
      streamed: "Order A-1001 has shipped; it arrives on 2026-12-02.",
      usage: [{ inputTokens: 320, outputTokens: 40 }, { inputTokens: 400, outputTokens: 60 }],
    });
    expect(fake.requests.map((r) => r.path)).toEqual(["/v1/messages", "/v1/messages"]);
    expect(fake.requests[0]!.body.tools.map((t: { name: string }) => t.name)).toEqual(["lookup_order", "submit_result"]);
  }, 30_000);

  it("the Models block of docs/models.md is the example's marked region", () => {
    const file = readFileSync(new URL("../../examples/ai-sdk.ts", import.meta.url), "utf8");
    const readme = readFileSync(new URL("../../docs/models.md", import.meta.url), "utf8");
    const region = /\/\/ ai-sdk:start\n([\s\S]*?)\/\/ ai-sdk:end\n/.exec(file)?.[1];
    const block = /<!-- ai-sdk:start -->\n```ts\n([\s\S]*?)```\n<!-- ai-sdk:end -->/.exec(readme)?.[1];
    expect(region).toBeDefined();
    expect(block).toBe(region);
  });
});
