/**
 * The chat protocols inside workerd (Cloudflare Workers' runtime, through
 * Miniflare, bundled as wrangler would, without `nodejs_compat`), on a real
 * Redis behind the Upstash-compatible bridge: `POST /v1/chat` answers a user
 * message with the AI SDK UI message stream, read by `DefaultChatTransport`
 * and `readUIMessageStream` (a tool call, its output, the text, `finish`);
 * `POST /v1/ag-ui` runs the agent for `@ag-ui/client`'s `HttpAgent`, an
 * approval interrupt resumed approved included. The bundle reaches no Node
 * built-in and no protobuf code (routes/chat/ag-ui-stream.ts writes its own
 * SSE frames).
 *
 * Node only: it starts redis-server, the bridge and workerd.
 */
import { EventType, HttpAgent } from "@ag-ui/client";
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleForWorkerd } from "../workerd/bundle.ts";
import { type RunningWorker, startWorker } from "../workerd/harness.ts";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";

const fixture = new URL("./fixtures/chat-worker.ts", import.meta.url).pathname;
const T = 90_000;

let redis: RedisServer;
let bridge: UpstashBridge;
let w: RunningWorker & { url: URL };
beforeAll(async () => {
  redis = await startRedisServer();
  bridge = await startUpstashBridge({ redisUrl: redis.url });
  w = await startWorker(fixture, {
    bindings: { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token, GATEHOUSE_REDIS_PREFIX: "wdchat" },
  });
}, T);
afterAll(async () => {
  await w?.dispose();
  await bridge?.close();
  await redis?.stop();
});

const base = () => w.url.href.replace(/\/$/, "");

describe("workerd: the chat protocols", () => {
  it("the chat routes bundle for workerd without Node built-ins or protobuf", async () => {
    const b = await bundleForWorkerd(fixture);
    expect(b.nodeBuiltins).toEqual([]);
    expect(b.code).not.toMatch(/protobuf/i);
  }, T);

  it("POST /v1/chat streams the answer as the UI message stream", async () => {
    const transport = new DefaultChatTransport<UIMessage>({ api: `${base()}/v1/chat`, body: { agent: "assistant" } });
    const stream = await transport.sendMessages({
      chatId: "wd-chat", messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "look around" }] }],
      trigger: "submit-message", messageId: undefined, abortSignal: undefined,
    });
    let last: UIMessage | undefined;
    for await (const m of readUIMessageStream({ stream })) last = m;
    const tool = last!.parts.find((p) => p.type === "tool-look") as Record<string, unknown> | undefined;
    expect(tool).toMatchObject({ state: "output-available", input: { q: "look around" }, output: { found: "look around" } });
    expect(last!.parts.filter((p) => p.type === "text").map((p) => (p as { text: string }).text).join("")).toBe("seen");
    const turn = last!.parts.find((p) => p.type === "data-gatehouse-turn") as { data: { status: string } } | undefined;
    expect(turn?.data.status).toBe("done");
  }, T);

  it("POST /v1/ag-ui runs the agent; an approval interrupt resumed approved runs the tool", async () => {
    const agent = new HttpAgent({ url: `${base()}/v1/ag-ui`, threadId: "wd-agui" });
    agent.addMessage({ id: "m-pay", role: "user", content: "pay 4" });
    const first: string[] = [];
    await agent.runAgent({ runId: "wd-r1", forwardedProps: { agent: "assistant" } }, { onEvent: ({ event }) => void first.push(event.type) });
    expect(first[0]).toBe(EventType.RUN_STARTED);
    expect(first).toContain(EventType.TOOL_CALL_START);
    expect(agent.pendingInterrupts).toHaveLength(1);
    const interrupt = agent.pendingInterrupts[0];
    const second: Array<Record<string, any>> = [];
    await agent.runAgent(
      { runId: "wd-r2", forwardedProps: { agent: "assistant" }, resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }] },
      { onEvent: ({ event }) => void second.push(event as never) },
    );
    const result = second.find((e) => e.type === EventType.TOOL_CALL_RESULT);
    expect(JSON.parse(result!.content)).toEqual({ paid: 4 });
    const text = second.filter((e) => e.type === EventType.TEXT_MESSAGE_CONTENT).map((e) => e.delta).join("");
    expect(text).toMatch(/^after pay: /);
    expect(second.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, outcome: { type: "success" } });
  }, T);
});
