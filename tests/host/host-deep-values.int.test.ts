/**
 * Deeply nested values cannot hang a turn, on the memory store and on Redis:
 * - a tool result over HTTP nested past the limit is refused with 400 before
 *   anything is written: the call stays pending and a valid delivery is then
 *   accepted (not `duplicate`), and the turn completes;
 * - an in-process tool returning a value nested thousands of levels deep gets
 *   the error outcome `invalid_result` and the turn goes on;
 * - a model whose tool-call arguments nest too deep gets a retryable model
 *   error, never a stack overflow.
 * And the helpers every such value could reach never recurse without a
 * bound: the text scan, the value check, deepFreeze, jsonCopy, canonical JSON
 * and the transcript.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import type { Store } from "../../mod.ts";
import { checkJsonValue, DEFAULT_JSON_LIMITS, HARD_MAX_DEPTH, jsonLimits, scanJsonText } from "../../common/json-bounds.ts";
import { deepFreeze } from "../../common/freeze.ts";
import { jsonCopy, JsonValueError } from "../../common/json.ts";
import { canonicalJson } from "../../verification/hash.ts";
import { outcomeText } from "../../actors/conversation/transcript.ts";
import { useRedisServer } from "../helpers/redis.ts";

/** A value nested `depth` arrays deep, built without recursion. */
function deep(depth: number): unknown {
  let v: unknown = "x";
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}
const deepText = (depth: number) => "[".repeat(depth) + "1" + "]".repeat(depth);

describe("bounded helpers", () => {
  it("scanJsonText measures depth, strings and items as JSON.parse would see them", () => {
    const L = jsonLimits({ maxDepth: 3, maxStringLength: 5, maxArrayLength: 2 });
    expect(scanJsonText("[[[1]]]", L)).toBeNull();
    expect(scanJsonText("[[[[1]]]]", L)).toMatchObject({ limit: "depth", max: 3 });
    expect(scanJsonText('{"a":{"b":{"c":1}}}', L)).toBeNull();
    expect(scanJsonText('{"a":{"b":{"c":{}}}}', L)).toMatchObject({ limit: "depth" });
    expect(scanJsonText('"abcde"', L)).toBeNull();
    expect(scanJsonText('"abcdef"', L)).toMatchObject({ limit: "string_length" });
    // Escapes count as the characters they decode to; brackets inside strings are text.
    expect(scanJsonText('"\\u0041\\n\\"[["', L)).toBeNull();
    expect(scanJsonText('"\\u0041\\n\\"[[["', L)).toMatchObject({ limit: "string_length" });
    expect(scanJsonText("[1,2]", L)).toBeNull();
    expect(scanJsonText("[1,2,3]", L)).toMatchObject({ limit: "array_length" });
    expect(scanJsonText('{"a":[1,2],"b":{"c":1}}', L)).toBeNull();
    expect(scanJsonText('{"a":1,"b":2,"c":3}', L)).toMatchObject({ limit: "array_length" });
    expect(scanJsonText('{"abcdef":1}', L)).toMatchObject({ limit: "string_length" });
    expect(scanJsonText('[true,false]', L)).toBeNull();
    expect(scanJsonText('[-1.5e3,"x"]', L)).toBeNull();
    // Linear and flat: a million levels are refused at once, without a deep stack.
    expect(scanJsonText(deepText(1_000_000), DEFAULT_JSON_LIMITS)).toMatchObject({ limit: "depth", max: 64 });
  });

  it("checkJsonValue checks values in memory iteratively (cycles count as too deep)", () => {
    expect(checkJsonValue(deep(64), DEFAULT_JSON_LIMITS)).toBeNull();
    expect(checkJsonValue(deep(65), DEFAULT_JSON_LIMITS)).toMatchObject({ limit: "depth" });
    expect(checkJsonValue(deep(1_000_000), DEFAULT_JSON_LIMITS)).toMatchObject({ limit: "depth" });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(checkJsonValue(cyclic, DEFAULT_JSON_LIMITS)).toMatchObject({ limit: "depth" });
    expect(checkJsonValue({ at: new Date(0), s: "x".repeat(10) }, DEFAULT_JSON_LIMITS)).toBeNull();
    expect(checkJsonValue(new Array(10_001).fill(0), DEFAULT_JSON_LIMITS)).toMatchObject({ limit: "array_length" });
  });

  it("jsonLimits refuses depths beyond the hard bound", () => {
    expect(() => jsonLimits({ maxDepth: HARD_MAX_DEPTH + 1 })).toThrow(RangeError);
    expect(() => jsonLimits({ maxDepth: 0 })).toThrow(RangeError);
    expect(jsonLimits({ maxDepth: HARD_MAX_DEPTH }).maxDepth).toBe(HARD_MAX_DEPTH);
  });

  it("deepFreeze, jsonCopy, canonicalJson and the transcript never overflow the stack", () => {
    const v = deep(200_000);
    expect(deepFreeze(v)).toBe(v);
    expect(Object.isFrozen(v)).toBe(true);
    expect(() => jsonCopy(deep(100_000))).toThrow(JsonValueError);
    expect(() => jsonCopy(deep(100_000))).toThrow(/deeper than 256/);
    expect(jsonCopy(deep(200))).toEqual(deep(200));
    expect(() => canonicalJson(deep(100_000))).toThrow(/deeper than 256/);
    expect(canonicalJson(deep(3))).toBe('[[["x"]]]');
    const text = outcomeText({ ok: true, value: deep(100_000) });
    expect(JSON.parse(text)).toMatchObject({ error: { type: "json_limit_exceeded" } });
    expect(outcomeText({ ok: true, value: deep(2) })).toBe('[["x"]]');
  });
});

const ask = defineTool({ name: "ask_human", description: "Ask a human", parameters: z.object({ q: z.string() }) });
const deepTool = defineTool({
  name: "deep_tool",
  description: "Returns a value nested very deep",
  parameters: z.object({}),
  execute: async () => deep(5_000),
});

const server = useRedisServer();
let n = 0;

const ENVS: Array<{ name: string; store(): Store }> = [
  { name: "memory", store: () => memoryStore() },
  { name: "redis", store: () => redisStore({ url: server!.url, prefix: `dv${++n}_${Math.random().toString(36).slice(2, 7)}` }) },
];

function post(gh: ReturnType<typeof createGatehouse>, path: string, body: string) {
  return gh.fetch(new Request(`http://gh.test${path}`, { method: "POST", headers: { "content-type": "application/json" }, body }));
}

for (const env of ENVS) {
  describe(`deep values: ${env.name}`, () => {
    it("a deep tool result over HTTP is refused with 400 and writes nothing; a valid delivery is then accepted and the turn completes", async () => {
      const agent = defineAgent({
        name: "helper", instructions: "x", tools: [ask],
        model: scriptedModel([
          { toolCalls: [{ name: "ask_human", args: { q: "?" } }] },
          { toolCalls: [{ name: "submit_result", args: { result: "done" } }] },
        ]),
      });
      const gh = createGatehouse({ agents: [agent], store: env.store() });
      const { turnId } = await (await post(gh, "/v1/agents/a1/tasks", JSON.stringify({ agent: "helper", input: "go" }))).json() as { turnId: string };
      await gh.drain();
      const toolCallId = (await gh.store.readEvents("a1", 0, 100)).find((e) => e.type === "tool_call")!.data.toolCallId as string;
      const head = await gh.store.getAgent("a1");
      for (const depth of [70, 4_107, 50_000]) {
        const body = `{"turnId":${JSON.stringify(turnId)},"toolCallId":${JSON.stringify(toolCallId)},"outcome":{"ok":true,"value":${deepText(depth)}}}`;
        const res = await post(gh, "/v1/agents/a1/tool-results", body);
        expect(res.status).toBe(400);
        expect(await res.json()).toMatchObject({ code: "json_limit_exceeded", limit: "depth" });
      }
      expect(await gh.store.getAgent("a1")).toEqual(head);
      expect((await gh.store.getToolCalls("a1", turnId))[0].status).toBe("pending");
      const ok = await post(gh, "/v1/agents/a1/tool-results", JSON.stringify({ turnId, toolCallId, outcome: { ok: true, value: { nested: [[["fine"]]] } } }));
      expect(await ok.json()).toEqual({ accepted: true, duplicate: false, contract: { passed: true, mismatch: null } });
      await gh.drain();
      const task = (await gh.store.readEvents("a1", 0, 100)).find((e) => e.type === "task")!;
      expect(task.data.status).toBe("done");
      // The watchdog still works after all of that.
      expect(await gh.tick()).toMatchObject({ timedOut: 0 });
      await gh.close();
    });

    it("an in-process tool returning a value 5 000 levels deep gets invalid_result and the turn goes on", async () => {
      const agent = defineAgent({
        name: "helper", instructions: "x", tools: [deepTool],
        model: scriptedModel([
          { toolCalls: [{ name: "deep_tool", args: {} }] },
          { toolCalls: [{ name: "submit_result", args: { result: "after" } }] },
        ]),
      });
      const gh = createGatehouse({ agents: [agent], store: env.store() });
      await post(gh, "/v1/agents/a1/tasks", JSON.stringify({ agent: "helper", input: "go" }));
      await gh.drain();
      const events = await gh.store.readEvents("a1", 0, 100);
      const result = events.find((e) => e.type === "tool_result")!;
      expect(result.data.outcome).toMatchObject({ ok: false, error: { type: "invalid_result", retryable: false } });
      expect(events.find((e) => e.type === "task")!.data.status).toBe("done");
      await gh.close();
    });

    it("tool-call arguments nested too deep are a retryable model error, then the step is retried", async () => {
      let calls = 0;
      const agent = defineAgent({
        name: "helper", instructions: "x", tools: [ask],
        model: scriptedModel(() => (++calls === 1
          ? { toolCalls: [{ name: "ask_human", args: { q: deep(3_000) } }] }
          : { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] })),
      });
      const gh = createGatehouse({ agents: [agent], store: env.store() });
      await post(gh, "/v1/agents/a1/tasks", JSON.stringify({ agent: "helper", input: "go" }));
      await gh.drain();
      const events = await gh.store.readEvents("a1", 0, 100);
      expect(events.find((e) => e.type === "model_error")!.data.message).toMatch(/nests deeper than 64/);
      expect(events.find((e) => e.type === "task")!.data.status).toBe("done");
      await gh.close();
    });
  });
}
