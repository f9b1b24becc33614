/**
 * An agent calls an MCP server's tool through gatehouse (mcpTools over
 * Streamable HTTP, a real SDK server), on the memory store and on Redis. The
 * server dies while the turn's first call runs: that call's outcome is
 * `mcp_unavailable`, retryable, and reaches the model (nothing of the turn is
 * lost); the model calls again once the server is back, the connection is
 * opened anew, the model sees `{ sum: 5 }` and the turn ends `done` with it.
 */
import { Redis as TcpRedis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mcpTools } from "@gatehouse-runtime/core/mcp";
import { createGatehouse, defineAgent, scriptedModel } from "@gatehouse-runtime/core";
import type { Store } from "../../store/port.ts";
import { memoryStore } from "../../store/memory.ts";
import { redisStore } from "../../store/redis.ts";
import { startMcpServer, type TestMcpServer } from "../helpers/mcp-server.ts";
import { useRedisServer } from "../helpers/redis.ts";

const redis = useRedisServer({}, 30_000);

const stores: Array<[string, () => { store: Store; cleanup: () => void }]> = [
  ["memory", () => ({ store: memoryStore(), cleanup: () => {} })],
  ["redis", () => {
    const client = new TcpRedis(redis.url, { enableAutoPipelining: false });
    return { store: redisStore({ client, prefix: `mcp_${Math.random().toString(36).slice(2, 8)}` }), cleanup: () => client.disconnect() };
  }],
];

describe.each(stores)("an agent with MCP tools on %s", (_name, makeStore) => {
  let mcp: TestMcpServer;
  beforeAll(async () => {
    mcp = await startMcpServer();
  });
  afterAll(async () => {
    await mcp?.stop();
  });

  it("calls the server's tool, sees a lost connection as a retryable outcome, reconnects, sees the result and ends done", async () => {
    const tools = await mcpTools({ url: mcp.url, allow: ["add", "hang"] });
    // The server dies while the first call runs.
    const killed = (async () => {
      while (!mcp.calls.includes("hang")) await new Promise((r) => setTimeout(r, 20));
      await mcp.stop();
    })();
    const seen: unknown[] = [];
    const model = scriptedModel(async ({ step, messages }) => {
      const last = messages.at(-1);
      if (step > 1 && last?.role === "tool") seen.push(JSON.parse(last.content));
      if (step === 1) return { toolCalls: [{ name: "hang", args: {} }] };
      if (step === 2) {
        await mcp.start();
        return { toolCalls: [{ name: "add", args: { a: 2, b: 3 } }] };
      }
      return { toolCalls: [{ name: "submit_result", args: { result: seen.at(-1) } }] };
    });
    const agent = defineAgent({ name: "adder", instructions: "Add.", model, tools });
    const { store, cleanup } = makeStore();
    const gh = createGatehouse({ agents: [agent], store });
    try {
      const accepted = await gh.fetch(new Request("http://localhost/v1/agents/m1/tasks", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ agent: "adder", input: "2 + 3" }),
      }));
      expect(accepted.status).toBe(202);
      await gh.drain();
      await killed;
      const state = await (await gh.fetch(new Request("http://localhost/v1/agents/m1"))).json() as { state: string; output: unknown };
      expect(state.state).toBe("done");
      expect(state.output).toEqual({ sum: 5 });
      expect(seen[0]).toMatchObject({ error: { type: "mcp_unavailable", retryable: true } });
      const page = await (await gh.fetch(new Request("http://localhost/v1/agents/m1/events?limit=500"))).json() as { events: Array<{ type: string; data: Record<string, unknown> }> };
      const results = page.events.filter((e) => e.type === "tool_result").map((e) => e.data.outcome);
      expect(results).toEqual([
        { ok: false, error: expect.objectContaining({ type: "mcp_unavailable", retryable: true }) },
        { ok: true, value: { sum: 5 } },
      ]);
      expect(tools.connections).toBe(2);
      expect(mcp.calls.filter((c) => c === "add")).toHaveLength(1);
    } finally {
      await gh.close();
      await tools.close();
      cleanup();
    }
  }, 60_000);
});
