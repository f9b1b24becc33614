/**
 * A tool result posted after a cancel was accepted and before a worker
 * applied it (docs/http.md, "POST /v1/agents/:agentId/tool-results"; store
 * invariant `results-after-cancel`), over HTTP on the memory store and on
 * Redis: the answer is `409 turn_cancelling` and nothing changes (no
 * `tool_result_received`, no `mail_ignored` later); the cancel then ends the
 * turn, and the same result answers `409 turn_finished`. A result posted
 * before the cancel is taken (200) and applied before the cancel.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel, type Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { useRedisServer } from "../helpers/redis.ts";

const server = useRedisServer();

let n = 0;
const adapters: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `rac${++n}-${Date.now()}:` })],
];

const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({ q: z.string() }) });

function setup(open: () => Store) {
  const agent = defineAgent({
    name: "helper",
    instructions: "",
    model: scriptedModel([{ toolCalls: [{ name: "ask_human", args: { q: "1" } }, { name: "ask_human", args: { q: "2" } }] }, { text: "done" }]),
    tools: [ask],
  });
  const gh = createGatehouse({ agents: [agent], store: open() });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
    return { status: res.status, type: res.headers.get("content-type"), body: await res.json() as Record<string, any> };
  };
  const waiting = async () => {
    const t = await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "go" });
    expect(t.status).toBe(202);
    await gh.drain();
    const v = (await call("GET", "/v1/agents/a1")).body;
    expect(v.state).toBe("waiting-tools");
    return { turnId: t.body.turnId as string, calls: (v.pendingToolCalls as Array<{ toolCallId: string }>).map((c) => c.toolCallId) };
  };
  const events = async () => (await call("GET", "/v1/agents/a1/events?format=json&limit=500")).body.events as Array<{ type: string; data: any }>;
  const result = (turnId: string, toolCallId: string) =>
    call("POST", "/v1/agents/a1/tool-results", { turnId, toolCallId, outcome: { ok: true, value: "yes" } });
  return { gh, call, waiting, events, result };
}

for (const [name, open] of adapters) {
  describe(`a tool result after a cancel (${name})`, () => {
    it("posted while the cancel waits: 409 turn_cancelling, nothing changed; after the cancel applies: 409 turn_finished", async () => {
      const s = setup(open);
      const { turnId, calls } = await s.waiting();
      expect((await s.call("POST", "/v1/agents/a1/cancel", { reason: "stop" })).status).toBe(202);
      const before = await s.events();
      const r = await s.result(turnId, calls[0]);
      expect(r.status).toBe(409);
      expect(r.type).toBe("application/problem+json");
      expect(r.body.code).toBe("turn_cancelling");
      expect(r.body.detail).toMatch(/cancel/);
      expect(await s.events()).toEqual(before);
      // The same result again answers the same while the cancel waits.
      expect((await s.result(turnId, calls[0])).body.code).toBe("turn_cancelling");

      await s.gh.drain();
      const v = (await s.call("GET", "/v1/agents/a1")).body;
      expect(v.state).toBe("failed");
      const after = await s.events();
      expect(after.filter((e) => e.type === "mail_ignored")).toEqual([]);
      expect(after.filter((e) => e.type === "tool_result_received")).toEqual([]);
      const late = await s.result(turnId, calls[0]);
      expect([late.status, late.body.code]).toEqual([409, "turn_finished"]);
      await s.gh.close();
    });

    it("posted before the cancel: 200, and the result is applied before the cancel ends the turn", async () => {
      const s = setup(open);
      const { turnId, calls } = await s.waiting();
      expect((await s.result(turnId, calls[0])).status).toBe(200);
      expect((await s.call("POST", "/v1/agents/a1/cancel", { reason: "stop" })).status).toBe(202);
      expect((await s.result(turnId, calls[1])).body.code).toBe("turn_cancelling");
      await s.gh.drain();
      expect((await s.call("GET", "/v1/agents/a1")).body.state).toBe("failed");
      const after = await s.events();
      expect(after.filter((e) => e.type === "mail_ignored")).toEqual([]);
      expect(after.filter((e) => e.type === "tool_result_received").map((e) => e.data.toolCallId)).toEqual([calls[0]]);
      await s.gh.close();
    });
  });
}
