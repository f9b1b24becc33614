/**
 * aiSdkModel inside workerd (Cloudflare Workers' runtime, through Miniflare,
 * bundled as wrangler would, without `nodejs_compat`): the support agent of
 * examples/ai-sdk.ts, on `@ai-sdk/anthropic`, talks to a local server
 * speaking Anthropic's Messages API (tests/helpers/fake-anthropic.ts) and
 * stores its turn in a real Redis behind the Upstash-compatible bridge. A
 * 429 on the first call is retried; the tool runs in the Worker; the
 * streamed answer is stored as `chunk` events. The bundle must reach no Node
 * built-in.
 *
 * Node only: it starts redis-server, the bridge, the fake server and workerd.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleForWorkerd } from "../workerd/bundle.ts";
import { anthropicError, type FakeAnthropic, messageStream, startFakeAnthropic } from "../helpers/fake-anthropic.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";
import { eventually, type RunningWorker, startWorker } from "../workerd/harness.ts";

const fixture = new URL("../workerd/fixtures/ai-sdk.ts", import.meta.url).pathname;
const T = 90_000;

const redis = useRedisServer({}, T);
let bridge: UpstashBridge;
let fake: FakeAnthropic;
let w: RunningWorker;
beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: redis.url });
  fake = await startFakeAnthropic();
  w = await startWorker(fixture, {
    bindings: { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token, GATEHOUSE_REDIS_PREFIX: "wdai" },
    define: { MODEL_BASE_URL: fake.baseURL },
  });
}, T);
afterAll(async () => {
  await w?.dispose();
  await fake?.close();
  await bridge?.close();
});

describe("workerd: aiSdkModel over @ai-sdk/anthropic", () => {
  it("the ai-sdk subpath with @ai-sdk/anthropic bundles for workerd without any Node built-in", async () => {
    const b = await bundleForWorkerd(fixture, { MODEL_BASE_URL: JSON.stringify("http://127.0.0.1:1/v1") });
    expect(b.nodeBuiltins).toEqual([]);
  }, T);

  it("a 429 retried, lookup_order in the Worker, the answer streamed into chunk events, done", async () => {
    fake.enqueue(anthropicError(429, "rate_limit_error", "slow down"));
    fake.script = (req) => {
      const last = req.body.messages.at(-1);
      const result = Array.isArray(last.content) ? last.content.find((c: any) => c.type === "tool_result") : undefined;
      if (!result) return messageStream([{ type: "tool_use", id: "toolu_1", name: "lookup_order", input: { orderId: "A-1001" } }], { input: 50, output: 9 });
      const { eta } = JSON.parse(typeof result.content === "string" ? result.content : result.content[0].text);
      return messageStream([
        { type: "text", text: ["Shipped, ", `arriving ${eta}.`] },
        { type: "tool_use", id: "toolu_2", name: "submit_result", input: { result: { eta } } },
      ], { input: 80, output: 12 });
    };
    const r = await w.fetch("/v1/agents/cust-9/tasks", { method: "POST", json: { agent: "support", input: "Where is order A-1001?" } });
    expect(r.status).toBe(202);
    const view = await eventually("cust-9 done", async () => {
      const v = (await (await w.fetch("/v1/agents/cust-9")).json()) as { state: string; output?: unknown };
      if (v.state === "failed") throw new Error(JSON.stringify(v));
      return v.state === "done" ? v : undefined;
    }, 60_000);
    expect(view.output).toEqual({ eta: "2026-12-02" });
    expect(fake.requests.map((q) => q.path)).toEqual(["/v1/messages", "/v1/messages", "/v1/messages"]);
    expect(fake.requests[0]!.headers["x-api-key"]).toBe("sk-ant-workerd");
    const events = (await (await w.fetch("/v1/agents/cust-9/events?format=json&after=0&limit=500")).json()) as { events: Array<{ type: string; data: any }> };
    expect(events.events.filter((e) => e.type === "model_error").map((e) => e.data.message)).toEqual([
      expect.stringContaining("HTTP 429"),
    ]);
    expect(events.events.filter((e) => e.type === "chunk").map((e) => e.data.text).join("")).toBe("Shipped, arriving 2026-12-02.");
    expect(events.events.filter((e) => e.type === "step" && e.data.phase === "completed").map((e) => e.data.llmUsage)).toEqual([
      { inputTokens: 50, outputTokens: 9 },
      { inputTokens: 80, outputTokens: 12 },
    ]);
  }, T);
});
