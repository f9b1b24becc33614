/**
 * Contracts through the host and the routes, on the memory store: the one
 * check at both boundaries (in-process results, external results posted over
 * HTTP), preconditions before execute, ok()/error() from execute, call logs,
 * the registry (recorded on success only, overlap events, <known_tools>,
 * GET /v1/tools, `gatehouse interfaces`), and the regression: a tool without
 * a contract behaves as before.
 */
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, error, type Gatehouse, memoryStore, ok } from "../../mod.ts";
import type { AnyAgent, ModelRequest, ModelResponse } from "../../mod.ts";
import { interfacesCommand } from "../../entry/interfaces.ts";
import { main as externalExample } from "../../examples/contracts.ts";
import { jsonRequest } from "../helpers/http.ts";

const open: Gatehouse[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

function model(script: (req: ModelRequest) => ModelResponse) {
  const requests: ModelRequest[] = [];
  return { requests, m: { name: "test", generate: async (req: ModelRequest) => (requests.push(req), script(req)) } };
}

function setup(agents: AnyAgent[], store = memoryStore()) {
  const gh = createGatehouse({ agents, store });
  open.push(gh);
  return gh;
}

const post = (gh: Gatehouse, path: string, body: unknown) => gh.app.fetch(jsonRequest("POST", path, body, {}, "http://localhost"));

async function task(gh: Gatehouse, agentId: string, agent: string, input: unknown) {
  const res = await post(gh, `/v1/agents/${agentId}/tasks`, { agent, input });
  expect(res.status).toBe(202);
  await gh.drain();
  return ((await res.json()) as { turnId: string }).turnId;
}

/** The tool messages of the current turn (after its user message), parsed. */
const toolMessages = (req: ModelRequest) =>
  req.messages.slice(req.messages.findLastIndex((m) => m.role === "user")).filter((m) => m.role === "tool").map((m) => JSON.parse(m.content));

describe("in-process results", () => {
  it("a violating result reaches the model as contract_violation; the record and the tool_result event carry contractValidation", async () => {
    let calls = 0;
    const fetcher = defineTool({
      name: "fetch_url", role: "web_fetcher", description: "Fetch", parameters: z.object({ url: z.string() }),
      deliverable: { type: "object", required: ["body"] },
      execute: () => (++calls === 1 ? { status: 503 } : { status: 200, body: "<p>" }),
    });
    const { requests, m } = model((req) => {
      const results = toolMessages(req);
      if (results.length === 0 || results.at(-1).error) return { toolCalls: [{ name: "fetch_url", args: { url: "u" } }] };
      return { toolCalls: [{ name: "submit_result", args: { result: results.at(-1) } }] };
    });
    const gh = setup([defineAgent({ name: "reader", instructions: "Read.", model: m, tools: [fetcher] })]);
    const turnId = await task(gh, "r1", "reader", "go");
    expect(toolMessages(requests[1])[0]).toMatchObject({
      error: { type: "contract_violation", retryable: false, metadata: { mismatch: "missing_required_key", expectedKeys: ["body"], actualKeys: ["status"], tool: "web_fetcher", method: "fetch_url" } },
    });
    const records = await gh.store.getToolCalls("r1", turnId);
    expect(records.map((r) => r.contractValidation)).toEqual([
      { applied: true, passed: false, mismatch: "missing_required_key", expectedKeys: ["body"], actualKeys: ["status"] },
      { applied: true, passed: true, mismatch: null, expectedKeys: ["body"], actualKeys: ["status", "body"] },
    ]);
    expect(records[0].outcome).toMatchObject({ ok: false, error: { type: "contract_violation" } });
    const events = (await gh.store.readEvents("r1", 0, 1000)).filter((e) => e.type === "tool_result");
    expect(events.map((e) => (e.data.contractValidation as { passed: boolean }).passed)).toEqual([false, true]);
    expect((await gh.store.getAgent("r1"))!.state).toBe("done");
  });

  it("a terminating result the contract refuses goes back to the model instead of ending the turn", async () => {
    const { terminate } = await import("../../tools/define.ts");
    const t = defineTool({
      name: "finish", description: "Finish", parameters: z.object({}), deliverable: { type: "object", required: ["answer"] },
      execute: () => terminate({ wrong: 1 }),
    });
    const { m } = model((req) => (toolMessages(req).length === 0 ? { toolCalls: [{ name: "finish", args: {} }] } : { toolCalls: [{ name: "submit_result", args: { result: "gave up" } }] }));
    const gh = setup([defineAgent({ name: "fin", instructions: "x", model: m, tools: [t] })]);
    await task(gh, "f1", "fin", "go");
    const done = (await gh.store.readEvents("f1", 0, 1000)).find((e) => e.type === "task")!;
    expect(done.data).toMatchObject({ status: "done", deliverable: "gave up" });
  });

  it("preconditions refuse empty required parameters before execute runs (invalid_input), for in-process and external tools", async () => {
    let executed = 0;
    const parse = defineTool({
      name: "parse", description: "Parse", parameters: z.object({ html: z.string().nullable() }), deliverable: { type: "array" },
      execute: () => (executed++, []),
    });
    const ext = defineTool({ name: "ask", description: "Ask", parameters: z.object({ q: z.string() }), resultRequired: true });
    const { requests, m } = model((req) =>
      toolMessages(req).length === 0
        ? { toolCalls: [{ name: "parse", args: { html: null } }, { name: "ask", args: { q: "" } }] }
        : { toolCalls: [{ name: "submit_result", args: { result: "x" } }] }
    );
    const gh = setup([defineAgent({ name: "p", instructions: "x", model: m, tools: [parse, ext] })]);
    const turnId = await task(gh, "p1", "p", "go");
    expect(executed).toBe(0);
    const [a, b] = toolMessages(requests[1]);
    expect(a.error).toMatchObject({ type: "invalid_input", metadata: { mismatch: "nil_required_input", parameters: ["html"], given: { html: "null" } } });
    expect(b.error).toMatchObject({ type: "invalid_input", metadata: { parameters: ["q"] } });
    // The external call with an empty required argument was never announced as external.
    const calls = await gh.store.getToolCalls("p1", turnId);
    expect(calls.map((c) => [c.name, c.external, c.status])).toEqual([["parse", false, "resolved"], ["ask", false, "resolved"]]);
  });

  it("execute may return ok() or error(); a plain value that looks like an outcome stays a value", async () => {
    const a = defineTool({ name: "a", description: "a", parameters: z.object({}), execute: () => ok({ n: 1 }) });
    const b = defineTool({ name: "b", description: "b", parameters: z.object({}), execute: () => error({ type: "not_found", message: "no such page", retriable: true, metadata: { url: "u" } }) });
    const c = defineTool({ name: "c", description: "c", parameters: z.object({}), execute: () => ({ ok: false, error: "plain" }) });
    const { requests, m } = model((req) =>
      toolMessages(req).length === 0
        ? { toolCalls: [{ name: "a", args: {} }, { name: "b", args: {} }, { name: "c", args: {} }] }
        : { toolCalls: [{ name: "submit_result", args: { result: "x" } }] }
    );
    const gh = setup([defineAgent({ name: "o", instructions: "x", model: m, tools: [a, b, c] })]);
    await task(gh, "o1", "o", "go");
    expect(toolMessages(requests[1])).toEqual([
      { n: 1 },
      { error: { type: "not_found", message: "no such page", retryable: true, metadata: { url: "u" } } },
      { ok: false, error: "plain" },
    ]);
  });
});

describe("external results posted over HTTP", () => {
  it("a violating result is accepted as contract_violation: the answer says so, the model gets the typed error, a redelivery is a duplicate", async () => {
    const lookup = defineTool({ name: "lookup_user", description: "Look up", parameters: z.object({ email: z.string() }), deliverable: { type: "object", required: ["userId"] } });
    const { requests, m } = model((req) => {
      const r = toolMessages(req);
      return r.length === 0 ? { toolCalls: [{ name: "lookup_user", args: { email: "a@b" } }] } : { toolCalls: [{ name: "submit_result", args: { result: r[0] } }] };
    });
    const gh = setup([defineAgent({ name: "s", instructions: "x", model: m, tools: [lookup] })]);
    const turnId = await task(gh, "s1", "s", "go");
    const call = (await gh.store.getToolCalls("s1", turnId))[0];
    const body = { turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: { name: "Dana" } }, afterExecution: "terminate" };
    const first = await post(gh, "/v1/agents/s1/tool-results", body);
    expect([first.status, await first.json()]).toEqual([200, { accepted: true, duplicate: false, contract: { passed: false, mismatch: "missing_required_key" } }]);
    const again = await post(gh, "/v1/agents/s1/tool-results", body);
    expect([again.status, await again.json()]).toEqual([200, { accepted: true, duplicate: true, contract: { passed: false, mismatch: "missing_required_key" } }]);
    const rec = (await gh.store.getToolCalls("s1", turnId))[0];
    expect(rec).toMatchObject({
      outcome: { ok: false, error: { type: "contract_violation", metadata: { expectedShape: "object", actualShape: "object", expectedKeys: ["userId"], actualKeys: ["name"], mismatch: "missing_required_key", tool: "lookup_user", method: "lookup_user" } } },
      afterExecution: "continue",
      contractValidation: { applied: true, passed: false, mismatch: "missing_required_key", expectedKeys: ["userId"], actualKeys: ["name"] },
    });
    const received = (await gh.store.readEvents("s1", 0, 1000)).find((e) => e.type === "tool_result_received")!;
    expect(received.data).toMatchObject({ ok: false, contractValidation: { passed: false } });
    await gh.drain();
    // The refused result did not end the turn (terminate was dropped): the model saw the typed error.
    expect(toolMessages(requests[1])[0].error.type).toBe("contract_violation");
  });

  it("a tolerant spelling passes and is stored as posted; an error outcome is not checked", async () => {
    const lookup = defineTool({ name: "lookup_user", description: "Look up", parameters: z.object({ email: z.string() }), deliverable: { type: "object", required: ["userId"] } });
    const { m } = model((req) => (toolMessages(req).length === 0 ? { toolCalls: [{ name: "lookup_user", args: { email: "a@b" } }] } : { toolCalls: [{ name: "submit_result", args: { result: "x" } }] }));
    const gh = setup([defineAgent({ name: "s", instructions: "x", model: m, tools: [lookup] })]);
    const t1 = await task(gh, "s2", "s", "go");
    const c1 = (await gh.store.getToolCalls("s2", t1))[0];
    const r1 = await post(gh, "/v1/agents/s2/tool-results", { turnId: t1, toolCallId: c1.toolCallId, outcome: { ok: true, value: { "user-id": "u1" } } });
    expect(await r1.json()).toEqual({ accepted: true, duplicate: false, contract: { passed: true, mismatch: null } });
    expect((await gh.store.getToolCalls("s2", t1))[0]).toMatchObject({
      outcome: { ok: true, value: { "user-id": "u1" } },
      contractValidation: { applied: true, passed: true, tolerated: [{ expected: "userId", found: "user-id" }] },
    });
    await gh.drain();
    const t2 = await task(gh, "s2", "s", "again");
    const c2 = (await gh.store.getToolCalls("s2", t2))[0];
    const r2 = await post(gh, "/v1/agents/s2/tool-results", { turnId: t2, toolCallId: c2.toolCallId, outcome: { ok: false, error: { type: "denied", message: "no", retriable: false } } });
    expect(await r2.json()).toEqual({ accepted: true, duplicate: false, contract: { passed: true, mismatch: null } });
    expect((await gh.store.getToolCalls("s2", t2))[0].contractValidation).toEqual({ applied: false, passed: true, mismatch: null, expectedKeys: [], actualKeys: [] });
  });

  it("an external tool that declares its result required refuses an empty one with invalid_input", async () => {
    const search = defineTool({ name: "search", description: "Search", parameters: z.object({ q: z.string() }), resultRequired: true });
    const { requests, m } = model((req) => (toolMessages(req).length === 0 ? { toolCalls: [{ name: "search", args: { q: "x" } }] } : { toolCalls: [{ name: "submit_result", args: { result: "x" } }] }));
    const gh = setup([defineAgent({ name: "q", instructions: "x", model: m, tools: [search] })]);
    const turnId = await task(gh, "q1", "q", "go");
    const call = (await gh.store.getToolCalls("q1", turnId))[0];
    const res = await post(gh, "/v1/agents/q1/tool-results", { turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: [] } });
    expect(await res.json()).toEqual({ accepted: true, duplicate: false, contract: { passed: false, mismatch: "nil_required_input" } });
    await gh.drain();
    expect(toolMessages(requests[1])[0].error).toMatchObject({ type: "invalid_input", retryable: false, metadata: { mismatch: "nil_required_input", method: "search" } });
  });

  it("the contracts block of docs/contracts.md is the example's text", () => {
    const readme = readFileSync(new URL("../../docs/contracts.md", import.meta.url), "utf8");
    const block = readme.match(/<!-- contracts:start -->\n```ts\n([\s\S]*?)```\n<!-- contracts:end -->/)![1];
    expect(readFileSync(new URL("../../examples/contracts.ts", import.meta.url), "utf8")).toContain(block);
  });

  it("the example of docs/contracts.md runs: refused, then accepted by tolerance", async () => {
    expect(await externalExample()).toEqual({
      refused: { accepted: true, duplicate: false, contract: { passed: false, mismatch: "missing_required_key" } },
      accepted: { accepted: true, duplicate: false, contract: { passed: true, mismatch: null } },
      output: { user_id: "u_42", plan: "pro" },
    });
  });
});

describe("the tool registry through the host", () => {
  const fetcherTool = (name: string, ok = true) =>
    defineTool({
      name, role: "web_fetcher", description: "Fetch", parameters: z.object({ url: z.string() }), deliverable: { type: "object", required: ["body"] },
      execute: () => (ok ? { body: "x" } : { status: 500 }),
    });

  it("records successful calls only; overlapping methods raise one interface_overlap and a hint; nothing is renamed", async () => {
    const { requests, m } = model((req) => {
      const n = toolMessages(req).length;
      if (n === 0) return { toolCalls: [{ name: "fetch_url", args: { url: "a" } }, { name: "broken", args: { url: "b" } }] };
      if (n === 2) return { toolCalls: [{ name: "fetch", args: { url: "a" } }] };
      return { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] };
    });
    const gh = setup([defineAgent({ name: "w", instructions: "Fetch.", model: m, tools: [fetcherTool("fetch_url"), fetcherTool("fetch"), fetcherTool("broken", false)] })]);
    await task(gh, "w1", "w", "go");
    const overlaps = (await gh.store.readEvents("w1", 0, 1000)).filter((e) => e.type === "interface_overlap");
    expect(overlaps.map((e) => e.data)).toEqual([{
      role: "web_fetcher", method: "fetch", overlaps: [{ methods: ["fetch_url", "fetch"], kind: "prefix" }],
      hint: 'Role "web_fetcher" has overlapping methods: fetch_url / fetch. Consider consolidating them; nothing was renamed.',
    }]);
    expect(requests[1].messages[0].content).toBe("Fetch.\n\n<known_tools>\n- web_fetcher: methods fetch_url\n</known_tools>");
    expect(requests[2].messages[0].content).toContain('<interface_overlap role="web_fetcher">');
    const list = await (await gh.app.request("/v1/tools")).json();
    expect(list).toEqual({ tools: [expect.objectContaining({ role: "web_fetcher", methods: ["fetch_url", "fetch"], calls: 2 })] });
    const one = await gh.app.request("/v1/tools/web_fetcher");
    expect(await one.json()).toMatchObject({ role: "web_fetcher", overlaps: [{ methods: ["fetch_url", "fetch"], kind: "prefix" }] });
    const missing = await gh.app.request("/v1/tools/nope");
    expect([missing.status, missing.headers.get("content-type"), (await missing.json()).code]).toEqual([404, "application/problem+json", "tool_role_not_found"]);
    const bad = await gh.app.request("/v1/tools/a.b");
    expect([bad.status, (await bad.json()).code]).toEqual([400, "invalid_tool_role"]);
    // `gatehouse interfaces --role web_fetcher` prints the same registry.
    const cli = await interfacesCommand(gh.store, ["--role", "web_fetcher"]);
    expect(cli).toEqual({
      exitCode: 0, err: "",
      out: "role web_fetcher: 2 successful calls\n  methods:  fetch_url, fetch\n  aliases:  (none)\n  overlaps: fetch_url / fetch (prefix)\n",
    });
    expect((await interfacesCommand(gh.store, ["--role", "nope"])).exitCode).toBe(1);
    expect((await interfacesCommand(gh.store, ["--bogus"])).exitCode).toBe(2);
    expect((await interfacesCommand(memoryStore(), [])).out).toBe("the tool registry is empty\n");
  });

  it("<known_tools> lists the methods the registry knows, and a model that reads it calls the canonical one", async () => {
    const store = memoryStore();
    // Another agent used the role before: the registry knows its method.
    await store.recordToolMethod({ role: "web_fetcher", method: "fetch_url", now: 1 });
    const tool = defineTool({ name: "fetch_url", role: "web_fetcher", description: "Fetch", parameters: z.object({ url: z.string() }), execute: () => ({ body: "x" }) });
    const run = async (knownTools: boolean, agentId: string) => {
      const { requests, m } = model((req) => {
        if (toolMessages(req).length > 0) return { toolCalls: [{ name: "submit_result", args: { result: toolMessages(req)[0] } }] };
        // The model's guess without the block is its own spelling; with it, the method the block lists.
        const listed = /- web_fetcher: methods (\w+)/.exec(req.messages[0].content)?.[1];
        return { toolCalls: [{ name: listed ?? "fetchUrl", args: { url: "u" } }] };
      });
      const gh = setup([defineAgent({ name: `k${agentId}`, instructions: "Fetch.", model: m, tools: [tool], knownTools })], store);
      await task(gh, agentId, `k${agentId}`, "go");
      return { requests, done: (await gh.store.readEvents(agentId, 0, 1000)).find((e) => e.type === "task")!.data };
    };
    const informed = await run(true, "k1");
    expect(informed.requests[0].messages[0].content).toBe("Fetch.\n\n<known_tools>\n- web_fetcher: methods fetch_url\n</known_tools>");
    expect(informed.done).toMatchObject({ status: "done", deliverable: { body: "x" } });
    const blind = await run(false, "k2");
    expect(blind.requests[0].messages[0].content).toBe("Fetch.");
    expect(blind.done).toMatchObject({ status: "done", deliverable: { error: { type: "tool_not_offered" } } });
  });

  it("unrelated roles raise nothing: no interface_overlap event and no hint (negative)", async () => {
    const tools = [
      defineTool({ name: "fetch_url", role: "web_fetcher", description: "f", parameters: z.object({}), deliverable: { type: "object" }, execute: () => ({}) }),
      defineTool({ name: "fetch", role: "cache", description: "c", parameters: z.object({}), deliverable: { type: "object" }, execute: () => ({}) }),
      defineTool({ name: "parse", role: "parser", description: "p", parameters: z.object({}), deliverable: { type: "object" }, execute: () => ({}) }),
    ];
    const { requests, m } = model((req) =>
      toolMessages(req).length === 0
        ? { toolCalls: tools.map((t) => ({ name: t.name, args: {} })) }
        : { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] }
    );
    const gh = setup([defineAgent({ name: "u", instructions: "x", model: m, tools })]);
    await task(gh, "u1", "u", "go");
    await task(gh, "u1", "u", "again");
    expect((await gh.store.readEvents("u1", 0, 1000)).filter((e) => e.type === "interface_overlap")).toEqual([]);
    expect(requests.length).toBe(4);
    for (const r of requests) expect(r.messages[0].content).not.toContain("interface_overlap");
    expect(requests[3].messages[0].content).toContain("- cache: methods fetch");
  });
});

describe("regression: tools without a contract", () => {
  it("behave as before: no preconditions, no check, instructions alone as the system message", async () => {
    const echo = defineTool({ name: "echo", description: "Echo", parameters: z.object({ text: z.string() }), execute: ({ text }) => ({ text }) });
    const { requests, m } = model((req) =>
      toolMessages(req).length === 0 ? { toolCalls: [{ name: "echo", args: { text: "" } }] } : { toolCalls: [{ name: "submit_result", args: { result: toolMessages(req)[0] } }] }
    );
    const gh = setup([defineAgent({ name: "e", instructions: "Echo.", model: m, tools: [echo] })]);
    const turnId = await task(gh, "e1", "e", "go");
    expect(toolMessages(requests[1])).toEqual([{ text: "" }]);
    expect(requests.map((r) => r.messages[0].content)).toEqual(["Echo.", "Echo."]);
    expect((await gh.store.getToolCalls("e1", turnId))[0].contractValidation).toEqual({ applied: false, passed: true, mismatch: null, expectedKeys: [], actualKeys: [] });
    expect((await gh.store.readEvents("e1", 0, 1000)).find((e) => e.type === "task")!.data).toMatchObject({ status: "done", deliverable: { text: "" } });
  });
});
