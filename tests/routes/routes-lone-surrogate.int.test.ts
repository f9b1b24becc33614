/**
 * Lone UTF-16 surrogates over HTTP (store/port.ts invariant
 * `well-formed-text`, docs/http.md "Bodies"), on the memory store and on a
 * real Redis: `JSON.parse` accepts `"\ud800"`, and Redis's Lua
 * `cjson.decode` refuses the escape `JSON.stringify` writes back for it.
 *
 * - A body whose string or key holds one is `400 validation_failed` naming
 *   the field, and nothing is stored; the agent takes the next task and
 *   runs it to its end,
 *   and an escaped pair or an escaped backslash before `ud800` is ordinary text.
 * - Text no client sent (a model's tool call arguments and reply) is stored
 *   with U+FFFD; the external call's result, its approval, cancel, reset and
 *   delete all answer as for plain text.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import { memoryStore } from "../../store/memory.ts";
import type { Store } from "../../store/port.ts";
import { redisStore } from "../../store/redis.ts";
import { useRedisServer } from "../helpers/redis.ts";

const server = useRedisServer();
let n = 0;

const stores: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `ls${++n}x${process.pid}` })],
];

const HI = JSON.parse('"\\ud800"') as string;

const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({ q: z.string() }) });
const pay = defineTool({ name: "pay", description: "Pay", parameters: z.object({ to: z.string() }), needsApproval: true, execute: async () => "paid" });

describe.each(stores)("lone surrogates over HTTP on the %s store", (_name, open) => {
  function setup() {
    const helper = defineAgent({
      name: "helper",
      instructions: "",
      model: scriptedModel(() => ({ toolCalls: [{ name: "submit_result", args: { result: "ok" } }] })),
    });
    // A model that copies a lone surrogate into an external tool's arguments and into its text.
    const copier = defineAgent({
      name: "copier",
      instructions: "",
      model: scriptedModel([{ text: `asking ${HI}`, toolCalls: [{ name: "ask_human", args: { q: `who${HI}` } }] }, { text: `done${HI}` }]),
      tools: [ask],
    });
    const payer = defineAgent({
      name: "payer",
      instructions: "",
      model: scriptedModel([{ toolCalls: [{ name: "pay", args: { to: `x${HI}` } }] }, { text: "paid" }]),
      tools: [pay],
    });
    const store = open();
    const gh = createGatehouse({ agents: [helper, copier, payer], store });
    /** A request whose body is the given JSON text, as is. */
    const raw = async (method: string, path: string, text?: string) => {
      const res = await gh.fetch(new Request(`http://gh.test${path}`, {
        method,
        headers: text === undefined ? {} : { "content-type": "application/json" },
        body: text,
      }));
      return { status: res.status, body: await res.json() as any };
    };
    const call = (method: string, path: string, body?: unknown) => raw(method, path, body === undefined ? undefined : JSON.stringify(body));
    return { gh, store, raw, call };
  }

  it("an idempotency key with a lone surrogate escape is 400 validation_failed naming it; nothing is enqueued; the agent stays serviceable", async () => {
    const { gh, store, raw, call } = setup();
    const bad = await raw("POST", "/v1/agents/a1/tasks", '{"agent":"helper","input":"hi","idempotencyKey":"key\\ud800"}');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("validation_failed");
    expect(bad.body.detail).toContain("idempotencyKey");
    expect(bad.body.errors).toEqual([expect.objectContaining({ path: ["idempotencyKey"], code: "lone_surrogate" })]);
    expect(await store.getAgent("a1")).toBeNull();
    expect(await store.listAgents({ limit: 10 })).toEqual([]);
    // The agent takes tasks and ends them as before.
    const ok = await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hi", idempotencyKey: "key" });
    expect(ok.status).toBe(202);
    await gh.drain();
    expect((await call("GET", `/v1/agents/a1/tasks/${ok.body.turnId}`)).body.status).toBe("done");
    // Escaped pairs and an escaped backslash before `ud800` are ordinary text.
    const r = await raw("POST", "/v1/agents/a1/tasks", '{"agent":"helper","input":"\\ud83d\\ude00 \\\\ud800","idempotencyKey":"k\\uD83D\\uDE00"}');
    expect(r.status).toBe(202);
    await gh.drain();
    expect((await call("GET", `/v1/agents/a1/tasks/${r.body.turnId}`)).body).toMatchObject({ status: "done", input: "😀 \\ud800" });
    await gh.close();
  });

  it("every body field: the path names the string or key that holds it, and nothing changes", async () => {
    const { gh, store, raw, call } = setup();
    const first = await call("POST", "/v1/agents/a1/tasks", { agent: "copier", input: "go" });
    expect(first.status).toBe(202);
    await gh.drain();
    const before = JSON.stringify([await store.getAgent("a1"), await store.readEvents("a1", 0, 1_000)]);
    const cases: Array<[string, string, string, Array<string | number>]> = [
      ["POST", "/v1/agents/a1/tasks", '{"agent":"helper","input":{"q":["a","b\\uDFFF"]}}', ["input", "q", 1]],
      ["POST", "/v1/agents/a1/tasks", '{"agent":"helper","input":{"k\\ud800":1}}', ["input", "k\ufffd"]],
      ["POST", "/v1/agents/a2/tasks", '{"agent":"helper\\ud800","input":"x"}', ["agent"]],
      ["POST", "/v1/agents/a1/tool-results", `{"turnId":"${first.body.turnId}","toolCallId":"c","outcome":{"ok":true,"value":"\\ud800"}}`, ["outcome", "value"]],
      ["POST", "/v1/agents/a1/tool-results", `{"turnId":"t\\udc00","toolCallId":"c","outcome":{"ok":true,"value":1}}`, ["turnId"]],
      ["POST", "/v1/agents/a1/approvals", `{"turnId":"t","toolCallId":"c","approved":false,"reason":"no\\ud800"}`, ["reason"]],
      ["POST", "/v1/agents/a1/cancel", '{"reason":"stop\\ud800"}', ["reason"]],
      ["POST", "/v1/agents/a1/reset", '{"reason":"stuck\\ud800"}', ["reason"]],
      ["PUT", "/v1/agents/a1/schedules/s1", '{"agent":"helper","input":"\\ud800","everyMs":60000}', ["input"]],
    ];
    for (const [method, path, text, at] of cases) {
      const r = await raw(method, path, text);
      expect({ path, text, status: r.status, code: r.body.code, at: r.body.errors?.[0]?.path }).toEqual({ path, text, status: 400, code: "validation_failed", at });
    }
    expect(JSON.stringify([await store.getAgent("a1"), await store.readEvents("a1", 0, 1_000)])).toBe(before);
    expect(await store.getAgent("a2")).toBeNull();
    expect(await store.listSchedules("a1")).toEqual([]);
    await gh.close();
  });

  it("a model's lone surrogate in an external tool's arguments is stored as U+FFFD; its result, cancel, reset and delete answer as usual", async () => {
    const { gh, store, call } = setup();
    const t = await call("POST", "/v1/agents/a1/tasks", { agent: "copier", input: "go" });
    await gh.drain();
    const view = await call("GET", "/v1/agents/a1");
    expect(view.status).toBe(200);
    const [pending] = view.body.pendingToolCalls;
    expect((await store.getToolCalls("a1", t.body.turnId))[0].args).toEqual({ q: "who\ufffd" });
    const res = await call("POST", "/v1/agents/a1/tool-results", { turnId: t.body.turnId, toolCallId: pending.toolCallId, outcome: { ok: true, value: "Ada" } });
    expect(res.status).toBe(200);
    await gh.drain();
    expect((await call("GET", `/v1/agents/a1/tasks/${t.body.turnId}`)).body.status).toBe("done");
    expect(JSON.stringify(await store.readMessages("a1"))).toContain("done\ufffd");
    // A second turn waits on the tool: cancel and reset work, and so does delete.
    const t2 = await call("POST", "/v1/agents/a2/tasks", { agent: "copier", input: "go" });
    await gh.drain();
    expect((await call("POST", "/v1/agents/a2/cancel", { reason: "stop" })).status).toBe(202);
    await gh.drain();
    expect((await call("GET", `/v1/agents/a2/tasks/${t2.body.turnId}`)).body.status).toBe("failed");
    const t3 = await call("POST", "/v1/agents/a3/tasks", { agent: "copier", input: "go" });
    await gh.drain();
    expect((await call("POST", "/v1/agents/a3/reset", { reason: "stuck" })).status).toBe(200);
    expect((await call("GET", `/v1/agents/a3/tasks/${t3.body.turnId}`)).body.status).toBe("failed");
    expect((await call("DELETE", "/v1/agents/a3")).status).toBe(200);
    await gh.close();
  });

  it("a model's lone surrogate in an approval-gated call's arguments: the approval is decided and the call runs", async () => {
    const { gh, store, call } = setup();
    const t = await call("POST", "/v1/agents/a1/tasks", { agent: "payer", input: "go" });
    await gh.drain();
    const [rec] = await store.getToolCalls("a1", t.body.turnId);
    expect(rec.args).toEqual({ to: "x\ufffd" });
    const d = await call("POST", "/v1/agents/a1/approvals", { turnId: t.body.turnId, toolCallId: rec.toolCallId, approved: true, reason: "ok" });
    expect(d.status).toBe(200);
    await gh.drain();
    expect((await call("GET", `/v1/agents/a1/tasks/${t.body.turnId}`)).body.status).toBe("done");
    await gh.close();
  });
});
