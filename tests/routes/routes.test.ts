import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel } from "../../mod.ts";
import type { Gatehouse, GatehouseOptions, Store, StoredEvent } from "../../mod.ts";
import { deferred, recordingModel } from "../helpers/host.ts";
import { AgentView, EventsPage, MachineView, Problem, TaskAccepted, ToolResultAccepted, WatchdogTick } from "../../routes/schemas.ts";

const T0 = 1_700_000_000_000;

function fakeClock() {
  const clock = { t: T0, now: () => clock.t };
  return clock;
}

const ask = defineTool({ name: "ask_human", description: "Ask a human", parameters: z.object({ q: z.string() }) });

/** Step 1 calls the external tool, step 2 submits. */
function helperAgent(name = "helper") {
  return defineAgent({
    name,
    instructions: "Ask, then submit.",
    model: scriptedModel([
      { toolCalls: [{ name: "ask_human", args: { q: "ok?" } }] },
      { toolCalls: [{ name: "submit_result", args: { result: "yes" } }] },
    ]),
    tools: [ask],
  });
}

function setup(extra: Partial<GatehouseOptions> = {}) {
  const clock = fakeClock();
  const gh = createGatehouse({ agents: [helperAgent(), helperAgent("other")], clock, ...extra });
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    gh.fetch(
      new Request(`http://gh.test${path}`, {
        method,
        headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
  return { gh, clock, call };
}

async function startTurn(gh: Gatehouse, call: ReturnType<typeof setup>["call"], agentId = "a1") {
  const res = await call("POST", `/v1/agents/${agentId}/tasks`, { agent: "helper", input: "hello" });
  expect(res.status).toBe(202);
  const { turnId } = TaskAccepted.parse(await res.json());
  await gh.drain();
  const events = await gh.store.readEvents(agentId, 0, 1000);
  const toolCall = events.find((e) => e.type === "tool_call" && e.data.external === true)!;
  return { turnId, toolCallId: toolCall.data.toolCallId as string };
}

/** Reads SSE frames from a stream until `n` event frames arrived (comments are skipped). */
async function readFrames(reader: ReadableStreamDefaultReader<Uint8Array>, n: number) {
  const dec = new TextDecoder();
  let buf = "";
  const frames: Array<{ id: number; event: string; data: StoredEvent }> = [];
  while (frames.length < n) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let end: number;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      if (block.startsWith(":")) continue;
      const f: Record<string, string> = {};
      for (const line of block.split("\n")) {
        const i = line.indexOf(": ");
        f[line.slice(0, i)] = line.slice(i + 2);
      }
      frames.push({ id: Number(f.id), event: f.event, data: JSON.parse(f.data) });
    }
  }
  return frames;
}

describe("routes: a full turn over HTTP", () => {
  it("runs task -> external tool_call event -> tool result -> done, with the documented response shapes", async () => {
    const { gh, call } = setup();
    const res = await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: { text: "hello" } });
    expect(res.status).toBe(202);
    const accepted = TaskAccepted.parse(await res.json());
    expect(accepted).toMatchObject({ agentId: "a1", duplicate: false });
    await gh.drain();

    const page = EventsPage.parse(await (await call("GET", "/v1/agents/a1/events?format=json")).json());
    const toolCall = page.events.find((e): e is Extract<typeof e, { type: "tool_call" }> =>
      e.type === "tool_call" && e.data.name === "ask_human"
    );
    expect(toolCall?.data.external).toBe(true);
    expect(toolCall?.turnId).toBe(accepted.turnId);
    const toolCallId = toolCall!.data.toolCallId;

    const view = AgentView.parse(await (await call("GET", "/v1/agents/a1")).json());
    expect(view.state).toBe("waiting-tools");
    expect(view.agent).toBe("helper");
    expect(view.activeTurnId).toBe(accepted.turnId);
    expect(view.pendingToolCalls).toHaveLength(1);
    const pending = view.pendingToolCalls[0];
    expect(pending).toMatchObject({ toolCallId, name: "ask_human", args: { q: "ok?" }, external: true });
    expect(pending.deadline).toBe(new Date(pending.deadlineMs).toISOString());
    expect(view.updatedAt).toBe(new Date(view.updatedAtMs).toISOString());

    const r = await call("POST", "/v1/agents/a1/tool-results", {
      turnId: accepted.turnId,
      toolCallId,
      outcome: { ok: true, value: "sure" },
    });
    expect(r.status).toBe(200);
    expect(ToolResultAccepted.parse(await r.json())).toEqual({ accepted: true, duplicate: false, contract: { passed: true, mismatch: null } });
    await gh.drain();

    const done = AgentView.parse(await (await call("GET", "/v1/agents/a1")).json());
    expect(done.state).toBe("done");
    expect(done.output).toBe("yes");
    expect(done.activeTurnId).toBeNull();
    expect(done.turnId).toBe(accepted.turnId);
    expect(done.pendingToolCalls).toEqual([]);
    expect(done.usage.steps).toBe(2);
    const all = EventsPage.parse(await (await call("GET", "/v1/agents/a1/events")).json());
    const task = all.events.find((e) => e.type === "task");
    expect(task?.data).toMatchObject({ status: "done", deliverable: "yes" });
  });

  it("pages the event log with after/limit and nextAfter", async () => {
    const { gh, call } = setup();
    await startTurn(gh, call);
    const total = (await gh.store.getAgent("a1"))!.lastEventId;
    expect(total).toBeGreaterThan(4);
    const p1 = EventsPage.parse(await (await call("GET", "/v1/agents/a1/events?limit=3")).json());
    expect(p1.events.map((e) => e.id)).toEqual([1, 2, 3]);
    expect(p1.nextAfter).toBe(3);
    const p2 = EventsPage.parse(await (await call("GET", `/v1/agents/a1/events?after=${p1.nextAfter}&limit=500`)).json());
    expect(p2.events[0].id).toBe(4);
    expect(p2.events.at(-1)!.id).toBe(total);
    const p3 = EventsPage.parse(await (await call("GET", `/v1/agents/a1/events?after=${total}`)).json());
    expect(p3).toEqual({ events: [], nextAfter: total, more: false });
  });

  it("answers 404 agent_not_found for reads of an unknown agent", async () => {
    const { call } = setup();
    for (const path of ["/v1/agents/ghost", "/v1/agents/ghost/events"]) {
      const res = await call("GET", path);
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
      expect((await res.json()).code).toBe("agent_not_found");
    }
  });
});

describe("routes: tasks", () => {
  it("answers a repeated idempotency key with the first turn and duplicate: true, enqueuing nothing", async () => {
    const { gh, call } = setup();
    const body = { agent: "helper", input: "hi", idempotencyKey: "order-42" };
    const first = TaskAccepted.parse(await (await call("POST", "/v1/agents/a1/tasks", body)).json());
    const before = await gh.store.getAgent("a1");
    const again = await call("POST", "/v1/agents/a1/tasks", { ...body, input: "different input" });
    expect(again.status).toBe(202);
    expect(TaskAccepted.parse(await again.json())).toEqual({ agentId: "a1", turnId: first.turnId, duplicate: true });
    expect(await gh.store.getAgent("a1")).toEqual(before);
    const events = await gh.store.readEvents("a1", 0, 100);
    expect(events.filter((e) => e.type === "task_enqueued")).toHaveLength(1);
  });

  it("refuses a task naming another definition than the one the id is bound to (409)", async () => {
    const { gh, call } = setup();
    await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hi" });
    const before = await gh.store.readEvents("a1", 0, 100);
    const res = await call("POST", "/v1/agents/a1/tasks", { agent: "other", input: "hi" });
    expect(res.status).toBe(409);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const p = await res.json();
    expect(p).toMatchObject({ status: 409, code: "agent_definition_conflict", boundTo: "helper" });
    expect(typeof p.type).toBe("string");
    expect(typeof p.title).toBe("string");
    expect(typeof p.detail).toBe("string");
    expect(await gh.store.readEvents("a1", 0, 100)).toEqual(before);
  });

  it("passes verifyMaxAttempts into the task options", async () => {
    const { gh, call } = setup();
    await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hi", verifyAttempts: 7 });
    const head = await gh.store.getAgent("a1");
    const enq = (await gh.store.readEvents("a1", 0, 10)).find((e) => e.type === "task_enqueued");
    expect(enq?.data.options).toEqual({ verifyMaxAttempts: 7 });
    expect(head?.pendingTasks).toBe(1);
  });
});

describe("routes: tool results", () => {
  it("accepts a result once; 10 repeated deliveries of the same result answer duplicate: true and change nothing", async () => {
    const { gh, call } = setup();
    const { turnId, toolCallId } = await startTurn(gh, call);
    const body = { turnId, toolCallId, outcome: { ok: true, value: { first: 1, list: [1, 2] } } };
    const first = await call("POST", "/v1/agents/a1/tool-results", body);
    expect(await first.json()).toEqual({ accepted: true, duplicate: false, contract: { passed: true, mismatch: null } });
    const head = await gh.store.getAgent("a1");
    const events = await gh.store.readEvents("a1", 0, 1000);
    for (let i = 0; i < 10; i++) {
      // Key order and number spelling do not matter: values compare as canonical JSON.
      const outcome = i % 2 ? { value: { list: [1.0, 2], first: 1 }, ok: true } : body.outcome;
      const res = await call("POST", "/v1/agents/a1/tool-results", { ...body, outcome, ...(i % 3 ? { afterExecution: "continue" } : {}) });
      expect(res.status).toBe(200);
      expect(ToolResultAccepted.parse(await res.json())).toEqual({ accepted: true, duplicate: true, contract: { passed: true, mismatch: null } });
    }
    expect(await gh.store.getAgent("a1")).toEqual(head);
    expect(await gh.store.readEvents("a1", 0, 1000)).toEqual(events);
    await gh.drain();
    expect((await gh.store.getAgent("a1"))!.state).toBe("done");
  });

  it("a different result after the first answers 409 already_resolved with resolvedBy result and changes nothing", async () => {
    const { gh, call } = setup();
    const { turnId, toolCallId } = await startTurn(gh, call);
    const body = { turnId, toolCallId, outcome: { ok: true, value: "first" } };
    expect((await call("POST", "/v1/agents/a1/tool-results", body)).status).toBe(200);
    const head = await gh.store.getAgent("a1");
    const events = await gh.store.readEvents("a1", 0, 1000);
    const others = [
      { ...body, outcome: { ok: true, value: "second" } },
      { ...body, outcome: { ok: false, error: { type: "late", message: "late" } } },
      { ...body, afterExecution: "terminate" },
    ];
    for (const other of others) {
      const res = await call("POST", "/v1/agents/a1/tool-results", other);
      expect(res.status).toBe(409);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      const problem = Problem.parse(await res.json());
      expect(problem).toMatchObject({ code: "already_resolved", resolvedBy: "result" });
    }
    expect(await gh.store.getAgent("a1")).toEqual(head);
    expect(await gh.store.readEvents("a1", 0, 1000)).toEqual(events);
    const calls = await gh.store.getToolCalls("a1", turnId);
    expect(calls.find((c) => c.toolCallId === toolCallId)?.outcome).toEqual({ ok: true, value: "first" });
  });

  it("any result after the watchdog's timeout answers 409 already_resolved with resolvedBy timeout", async () => {
    const { gh, call, clock } = setup({ externalToolTimeoutMs: 1_000 });
    const { turnId, toolCallId } = await startTurn(gh, call);
    clock.t += 1_000;
    expect((await gh.tick()).timedOut).toBe(1);
    const head = await gh.store.getAgent("a1");
    const [timedOut] = await gh.store.getToolCalls("a1", turnId);
    for (const outcome of [{ ok: true, value: "late" }, timedOut.outcome]) {
      const res = await call("POST", "/v1/agents/a1/tool-results", { turnId, toolCallId, outcome });
      expect(res.status).toBe(409);
      expect(Problem.parse(await res.json())).toMatchObject({ code: "already_resolved", resolvedBy: "timeout" });
    }
    expect(await gh.store.getAgent("a1")).toEqual(head);
  });

  it("refuses a forged result for a running in-process call (409 not_external); the model sees the tool's own value", async () => {
    const started = deferred();
    const release = deferred<string>();
    const slow = defineTool({
      name: "slow", description: "runs in the worker", parameters: z.object({}),
      execute: async () => {
        started.resolve();
        return await release.promise;
      },
    });
    const model = recordingModel((req) => (req.step === 1 ? { toolCalls: [{ name: "slow", args: {} }] } : { text: "finished" }));
    const gh = createGatehouse({ agents: [defineAgent({ name: "forge", instructions: "", model, tools: [slow] })], clock: fakeClock() });
    const post = (path: string, body: unknown) =>
      gh.fetch(new Request(`http://gh.test${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
    const { turnId } = TaskAccepted.parse(await (await post("/v1/agents/f1/tasks", { agent: "forge", input: "go" })).json());
    const draining = gh.drain();
    await started.promise;

    // Call ids are predictable: call_<turnId>_<step>_<i>.
    const toolCallId = `call_${turnId}_1_0`;
    const [pending] = await gh.store.getToolCalls("f1", turnId);
    expect(pending).toMatchObject({ toolCallId, status: "pending", external: false });
    const head = await gh.store.getAgent("f1");
    const events = await gh.store.readEvents("f1", 0, 1000);
    for (const afterExecution of ["continue", "terminate"]) {
      const res = await post("/v1/agents/f1/tool-results", { turnId, toolCallId, outcome: { ok: true, value: "forged" }, afterExecution });
      expect(res.status).toBe(409);
      expect(Problem.parse(await res.json()).code).toBe("not_external");
    }
    expect(await gh.store.getAgent("f1")).toEqual(head);
    expect(await gh.store.readEvents("f1", 0, 1000)).toEqual(events);
    expect(await gh.store.getToolCalls("f1", turnId)).toEqual([pending]);

    release.resolve("genuine");
    await draining;
    expect((await gh.store.getAgent("f1"))!.state).toBe("done");
    expect(model.requests[1].messages.filter((m) => m.role === "tool")).toEqual([{ role: "tool", toolCallId, content: "genuine" }]);
    const [resolved] = await gh.store.getToolCalls("f1", turnId);
    expect(resolved).toMatchObject({ status: "resolved", source: "inline", outcome: { ok: true, value: "genuine" } });
    // Once the tool answered, the call is still not one that takes results from outside.
    const late = await post("/v1/agents/f1/tool-results", { turnId, toolCallId, outcome: { ok: true, value: "genuine" } });
    expect([late.status, (await late.json()).code]).toEqual([409, "not_external"]);
  });

  it("refuses a result for a turn that has finished (409 turn_finished)", async () => {
    const { gh, call } = setup();
    const { turnId, toolCallId } = await startTurn(gh, call);
    expect((await call("POST", "/v1/agents/a1/cancel")).status).toBe(202);
    await gh.drain();
    expect((await gh.store.getAgent("a1"))!.state).toBe("failed");
    const res = await call("POST", "/v1/agents/a1/tool-results", { turnId, toolCallId, outcome: { ok: true, value: 1 } });
    expect(res.status).toBe(409);
    expect((await res.json()).code).toBe("turn_finished");
  });

  it("answers 409 unknown_tool_call for a call the agent never made and 404 for an unknown agent", async () => {
    const { gh, call } = setup();
    const { turnId } = await startTurn(gh, call);
    const unknown = await call("POST", "/v1/agents/a1/tool-results", {
      turnId,
      toolCallId: "call_nope",
      outcome: { ok: true, value: 1 },
    });
    expect(unknown.status).toBe(409);
    expect((await unknown.json()).code).toBe("unknown_tool_call");
    const ghost = await call("POST", "/v1/agents/ghost/tool-results", {
      turnId,
      toolCallId: "c",
      outcome: { ok: true, value: 1 },
    });
    expect(ghost.status).toBe(404);
    expect((await ghost.json()).code).toBe("agent_not_found");
  });

  it("ends the turn with the result when afterExecution is terminate", async () => {
    const { gh, call } = setup();
    const { turnId, toolCallId } = await startTurn(gh, call);
    const res = await call("POST", "/v1/agents/a1/tool-results", {
      turnId,
      toolCallId,
      outcome: { ok: true, value: { final: true } },
      afterExecution: "terminate",
    });
    expect(res.status).toBe(200);
    await gh.drain();
    const view = AgentView.parse(await (await call("GET", "/v1/agents/a1")).json());
    expect(view.state).toBe("done");
    expect(view.output).toEqual({ final: true });
  });
});

describe("routes: cancel", () => {
  it("cancels the active turn (202), which fails with reason cancelled; a second cancel is 409 not_active", async () => {
    const { gh, call } = setup();
    await startTurn(gh, call);
    const res = await call("POST", "/v1/agents/a1/cancel", { reason: "user gave up" });
    expect(res.status).toBe(202);
    const turnId = (await gh.store.getAgent("a1"))!.activeTurnId;
    expect(await res.json()).toEqual({ accepted: true, turnId });
    await gh.drain();
    const view = AgentView.parse(await (await call("GET", "/v1/agents/a1")).json());
    expect(view.state).toBe("failed");
    expect(view.error).toEqual({ reason: "cancelled", message: "user gave up" });
    const again = await call("POST", "/v1/agents/a1/cancel");
    expect(again.status).toBe(409);
    expect((await again.json()).code).toBe("not_active");
    const ghost = await call("POST", "/v1/agents/ghost/cancel");
    expect(ghost.status).toBe(404);
    expect((await ghost.json()).code).toBe("agent_not_found");
  });
});

describe("routes: server-sent events", () => {
  it("streams stored events as id/event/data frames and resumes after Last-Event-ID", async () => {
    const { gh, call } = setup({ sse: { pollMs: 5 } });
    await startTurn(gh, call);
    const stored = await gh.store.readEvents("a1", 0, 1000);

    const res = await call("GET", "/v1/agents/a1/events", undefined, { accept: "text/event-stream" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    const first = await readFrames(reader, 4);
    await reader.cancel();
    expect(first.slice(0, 4).map((f) => f.id)).toEqual([1, 2, 3, 4]);
    for (const f of first) {
      const e = stored.find((s) => s.id === f.id)!;
      expect(f.event).toBe(e.type);
      expect(f.data).toEqual(e);
    }

    const resumed = await call("GET", "/v1/agents/a1/events", undefined, {
      accept: "text/event-stream",
      "last-event-id": "3",
    });
    const r2 = resumed.body!.getReader();
    const later = await readFrames(r2, stored.length - 3);
    await r2.cancel();
    expect(later.map((f) => f.id)).toEqual(stored.slice(3).map((e) => e.id));
  });

  it("delivers events appended after the stream opened", async () => {
    const { gh, call } = setup({ sse: { pollMs: 5 } });
    const { turnId, toolCallId } = await startTurn(gh, call);
    const last = (await gh.store.getAgent("a1"))!.lastEventId;
    const res = await call("GET", `/v1/agents/a1/events?format=sse&after=${last}`);
    const reader = res.body!.getReader();
    const pending = readFrames(reader, 1);
    await call("POST", "/v1/agents/a1/tool-results", { turnId, toolCallId, outcome: { ok: true, value: "x" } });
    const [frame] = await pending;
    await reader.cancel();
    expect(frame.id).toBe(last + 1);
    expect(frame.event).toBe("tool_result_received");
  });

  it("sends keep-alive comments while idle and stops polling once the reader cancels", async () => {
    let reads = 0;
    const base = memoryStore();
    const store: Store = Object.assign(Object.create(base) as Store, {
      readEvents: (...args: Parameters<Store["readEvents"]>) => {
        reads++;
        return base.readEvents(...args);
      },
    });
    const { gh, call } = setup({ store, sse: { pollMs: 2, keepAliveMs: 10 } });
    await startTurn(gh, call);
    const last = (await gh.store.getAgent("a1"))!.lastEventId;
    const res = await call("GET", `/v1/agents/a1/events?after=${last}`, undefined, { accept: "text/event-stream" });
    const reader = res.body!.getReader();
    const { value } = await reader.read();
    expect(new TextDecoder().decode(value)).toBe(": keep-alive\n\n");
    await reader.cancel();
    const after = reads;
    await new Promise((r) => setTimeout(r, 40));
    expect(reads).toBe(after);
  });

  it("closes the stream when the request signal aborts", async () => {
    const { gh, call } = setup({ sse: { pollMs: 2 } });
    await startTurn(gh, call);
    const last = (await gh.store.getAgent("a1"))!.lastEventId;
    const ac = new AbortController();
    const res = await gh.fetch(
      new Request(`http://gh.test/v1/agents/a1/events?format=sse&after=${last}`, { signal: ac.signal }),
    );
    const reader = res.body!.getReader();
    const next = reader.read().catch(() => ({ done: true as const, value: undefined }));
    ac.abort();
    const r = await next;
    expect(r.done).toBe(true);
  });
});

describe("routes: machine, watchdog, health", () => {
  it("serves an XState machine config with every transition of the statechart, and the introspection under meta", async () => {
    const { call } = setup();
    const res = await call("GET", "/v1/machine");
    expect(res.status).toBe(200);
    const m = MachineView.parse(await res.json());
    expect(Object.keys(m.states)).toEqual(m.meta.states.map((s) => s.name));
    expect(m.meta.states.map((s) => s.name)).toEqual(["idle", "running", "waiting-tools", "verifying", "revising", "done", "failed"]);
    const brief: Array<[string, string, string]> = [
      ["idle", "TASK_STARTED", "running"],
      ["done", "TASK_STARTED", "running"],
      ["failed", "TASK_STARTED", "running"],
      ["running", "MODEL_STEP", "waiting-tools"],
      ["running", "MODEL_STEP", "verifying"],
      ["running", "MODEL_STEP", "done"],
      ["running", "MODEL_STEP", "running"],
      ["running", "MODEL_FAILED", "failed"],
      ["running", "STEP_BUDGET_EXHAUSTED", "failed"],
      ["waiting-tools", "TOOL_RESULT", "running"],
      ["waiting-tools", "TOOL_RESULT", "done"],
      ["verifying", "VERIFY_PASSED", "done"],
      ["verifying", "VERIFY_REJECTED", "revising"],
      ["verifying", "VERIFY_REJECTED", "failed"],
      ["verifying", "VERIFY_ERROR", "verifying"],
      ["revising", "FEEDBACK_APPENDED", "running"],
      ["running", "CANCEL", "failed"],
      ["waiting-tools", "CANCEL", "failed"],
      ["verifying", "CANCEL", "failed"],
      ["revising", "CANCEL", "failed"],
    ];
    for (const [from, event, to] of brief) {
      expect(m.meta.transitions.some((t) => t.from === from && t.event === event && t.to === to), `${from} ${event} ${to}`)
        .toBe(true);
      const config = m.states[from].on?.[event] ?? [];
      expect(config.some((t) => (t.target ?? from) === to), `config ${from} ${event} ${to}`).toBe(true);
    }
    expect(m.meta.transitions.find((t) => t.from === "running" && t.to === "waiting-tools")?.guard).toBe("stepCallsTools");
    const toTools = m.states.running.on?.MODEL_STEP?.find((t) => t.target === "waiting-tools");
    expect(toTools?.guard).toBe("stepCallsTools");
    expect(toTools?.actions).toContain("recordPending");
    expect(m.meta.mermaid.startsWith("stateDiagram-v2\n")).toBe(true);
    expect(m.meta.mermaid).toContain('state "waiting-tools" as waiting_tools');
    expect(m.meta.mermaid).toContain("[*] --> idle");
    expect({ id: m.id, initial: m.initial }).toEqual({ id: "agent", initial: "idle" });
  });

  it("times out an external call past its deadline on POST /v1/watchdog/tick and the turn goes on", async () => {
    const { gh, clock, call } = setup();
    await startTurn(gh, call);
    const early = await call("POST", "/v1/watchdog/tick");
    expect(WatchdogTick.parse(await early.json())).toEqual({ timedOut: 0, alreadyResolved: 0, turnFinished: 0, skipped: 0 });
    clock.t += 11 * 60_000;
    const res = await call("POST", "/v1/watchdog/tick", {});
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ timedOut: 1, alreadyResolved: 0, turnFinished: 0, skipped: 0 });
    await gh.drain();
    expect((await gh.store.getAgent("a1"))!.state).toBe("done");
  });

  it("answers /healthz with the store kind", async () => {
    const { call } = setup();
    const res = await call("GET", "/healthz");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, store: "memory" });
  });
});

describe("routes: OpenAPI", () => {
  it("documents every registered route with its body, responses and the problem schema", async () => {
    const { gh, call } = setup();
    const doc = await (await call("GET", "/openapi.json")).json();
    expect(doc.openapi).toBe("3.1.0");
    const registered = gh.app.routes.filter((r) => r.method !== "ALL");
    expect(registered.length).toBeGreaterThanOrEqual(9);
    for (const r of registered) {
      const path = r.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
      const op = doc.paths[path]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.path}`).toBeDefined();
      expect(Object.keys(op.responses).some((s) => s.startsWith("2")), `${r.method} ${r.path}`).toBe(true);
      expect(op.responses["500"].content["application/problem+json"].schema.$ref).toBe("#/components/schemas/Problem");
    }
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops as object).map((m) => `${m} ${p}`));
    // A route registers one handler per validator and middleware: count each method and path once.
    expect(documented.length).toBe(new Set(registered.map((r) => `${r.method} ${r.path}`)).size);
    const task = doc.paths["/v1/agents/{agentId}/tasks"].post;
    expect(task.requestBody.content["application/json"].schema.$ref).toBe("#/components/schemas/TaskRequest");
    expect(task.responses["409"]["x-problem-codes"]).toEqual(["agent_definition_conflict"]);
    expect(task.responses["422"]["x-problem-codes"]).toEqual(["unknown_agent_definition", "invalid_concurrency_key"]);
    expect(task.responses["400"]["x-problem-codes"]).toEqual(
      expect.arrayContaining(["invalid_agent_id", "malformed_json", "validation_failed"]),
    );
    const schemas = doc.components.schemas;
    expect(schemas.TaskRequest.additionalProperties).toBe(false);
    expect(schemas.TaskRequest.required).toEqual(["agent", "input"]);
    expect(schemas.ToolResultRequest.properties.outcome.oneOf).toHaveLength(2);
    expect(schemas.Problem.required).toEqual(expect.arrayContaining(["type", "title", "status", "detail", "code"]));
    const events = doc.paths["/v1/agents/{agentId}/events"].get;
    expect(events.parameters.map((p: { name: string }) => p.name)).toEqual(
      ["agentId", "after", "limit", "format", "Last-Event-ID"],
    );
    expect(events.responses["200"].content["text/event-stream"]).toBeDefined();
    expect(JSON.stringify(doc)).not.toContain("$schema");
  });
});

describe("routes: bearer auth", () => {
  const token = "s3cret-token-0123456789";

  it("requires the bearer token on every route but /healthz when auth is configured", async () => {
    const { gh, call } = setup({ auth: { bearerTokens: ["another-token-abcdefghij", token] } });
    expect((await call("GET", "/healthz")).status).toBe(200);
    for (const [method, path] of [["GET", "/v1/machine"], ["GET", "/openapi.json"], ["POST", "/v1/watchdog/tick"], ["GET", "/nope"]]) {
      const none = await call(method, path);
      expect(none.status).toBe(401);
      expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect((await none.json()).code).toBe("unauthorized");
      const wrong = await call(method, path, undefined, { authorization: `Bearer ${token}x` });
      expect(wrong.status).toBe(401);
    }
    const refused = await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hi" });
    expect(refused.status).toBe(401);
    expect(await gh.store.getAgent("a1")).toBeNull();
    const ok = await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hi" }, { authorization: `Bearer ${token}` });
    expect(ok.status).toBe(202);
    const doc = await (await call("GET", "/openapi.json", undefined, { authorization: `bearer ${token}` })).json();
    expect(doc.components.securitySchemes.bearerAuth).toEqual({ type: "http", scheme: "bearer" });
    expect(doc.paths["/healthz"].get.security).toEqual([]);
  });

  it("is off by default and refuses an empty token list at startup", async () => {
    const { call } = setup();
    expect((await call("GET", "/v1/machine")).status).toBe(200);
    expect(() => createGatehouse({ agents: [helperAgent()], auth: { bearerTokens: [] } })).toThrow(/bearerTokens/);
    expect(() => createGatehouse({ agents: [helperAgent()], auth: { bearerTokens: ["short"] } })).toThrow(/token/);
  });
});

describe("routes: errors", () => {
  it("answers 500 internal_error without the error's message when the store throws", async () => {
    const base = memoryStore();
    const store: Store = Object.assign(Object.create(base) as Store, {
      getAgent: () => Promise.reject(new Error("connection string redis://user:pw@host leaked")),
    });
    const { call } = setup({ store });
    const res = await call("GET", "/v1/agents/a1");
    expect(res.status).toBe(500);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const text = await res.text();
    expect(JSON.parse(text).code).toBe("internal_error");
    expect(text).not.toContain("leaked");
    expect(text).not.toContain("at ");
  });
});
