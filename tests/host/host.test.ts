/**
 * The actor host, one behaviour at a time, through createGatehouse() and the
 * memory store with a hand-driven clock: tool loops, explicit completion,
 * mustEndWith and the step budget, tool specs, typed tool errors, usage and
 * events, model errors, cancel, long-lived agents, greedy batches and
 * idempotency. Fencing, crashes and the watchdog are in host-fencing.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type AnyAgent, defineAgent } from "../../agents/define.ts";
import { ModelError, ToolError } from "../../errors/errors.ts";
import { createGatehouse, type Gatehouse, type GatehouseOptions } from "../../gatehouse.ts";
import { scriptedModel } from "../../models/scripted.ts";
import { defineTool, terminate } from "../../tools/define.ts";
import type { ToolSpec } from "../../tools/specs.ts";
import { manualClock } from "../helpers/clock.ts";
import { SNAPSHOT_SCHEMA_VERSION } from "../../machines/types.ts";
import { ctxOf, deferred, enqueue, eventsOf, head, recordingModel, replayLog, toolMessages, transitionsOf } from "../helpers/host.ts";
import { memoryStateReader } from "../helpers/store-state.ts";

const open: Gatehouse[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

function setup(agents: AnyAgent[], over: Partial<GatehouseOptions> = {}) {
  const clock = manualClock();
  const gh = createGatehouse({ agents, clock, leaseMs: 30_000, concurrency: 2, ...over });
  open.push(gh);
  return { gh, clock, store: gh.store };
}

const lookup = defineTool({
  name: "lookup",
  description: "Look a customer up",
  parameters: z.object({ email: z.string() }),
  execute: ({ email }) => ({ email, plan: "pro" }),
});
const askHuman = defineTool({ name: "ask_human", description: "Ask a human", parameters: z.object({ question: z.string() }) });

describe("a turn", () => {
  it("runs an in-process tool, waits for an external one, and completes with submit_result", async () => {
    const model = recordingModel((req) => {
      if (req.step === 1) {
        return { toolCalls: [{ name: "lookup", args: { email: "a@b.c" } }, { name: "ask_human", args: { question: "refund?" } }] };
      }
      const tools = req.messages.filter((m) => m.role === "tool").map((m) => m.content);
      return { toolCalls: [{ name: "submit_result", args: { result: { seen: tools } } }] };
    });
    const agent = defineAgent({ name: "support", instructions: "Help.", model, tools: [lookup, askHuman] });
    const { gh, clock, store } = setup([agent]);
    const { turnId } = await enqueue(store, clock, "a1", agent, "customer a@b.c wants a refund");
    await gh.drain();

    expect((await head(store, "a1")).state).toBe("waiting-tools");
    const calls = await store.getToolCalls("a1", turnId);
    expect(calls.map((c) => [c.name, c.status, c.external])).toEqual([["lookup", "resolved", false], ["ask_human", "pending", true]]);
    expect(model.requests).toHaveLength(1);

    const ask = calls.find((c) => c.name === "ask_human")!;
    const r = await store.deliverToolResult({
      agentId: "a1", turnId, toolCallId: ask.toolCallId, outcome: { ok: true, value: "yes" }, afterExecution: "continue", source: "http", now: clock.now(),
    });
    expect(r.status).toBe("accepted");
    await gh.drain();

    const h = await head(store, "a1");
    expect(h.state).toBe("done");
    expect(h.activeTurnId).toBeNull();
    expect((await ctxOf(store, "a1")).output).toEqual({ seen: [JSON.stringify({ email: "a@b.c", plan: "pro" }), "yes"] });
    // The model saw the instructions first and each tool call answered exactly once.
    expect(model.requests[1].messages[0]).toEqual({ role: "system", content: "Help." });
    for (const c of calls) expect(toolMessages(model.requests[1].messages, c.toolCallId)).toHaveLength(1);
  });
});

describe("mustEndWith and the step budget", () => {
  it("text without the required tool appends a system reminder and the turn continues", async () => {
    const finish = defineTool({
      name: "finish",
      description: "End the turn",
      parameters: z.object({ answer: z.number() }),
      execute: ({ answer }) => terminate({ final: answer }),
    });
    const model = recordingModel((req) =>
      req.step === 1 ? { text: "All done, I think." } : { toolCalls: [{ name: "finish", args: { answer: 7 } }] }
    );
    const agent = defineAgent({ name: "strict", instructions: "Use finish.", model, tools: [finish], mustEndWith: ["finish"] });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "s1", agent, "go");
    await gh.drain();

    expect((await head(store, "s1")).state).toBe("done");
    expect((await ctxOf(store, "s1")).output).toEqual({ final: 7 });
    const second = model.requests[1].messages;
    expect(second.at(-2)).toEqual({ role: "assistant", content: "All done, I think." });
    expect(second.at(-1)?.role).toBe("system");
    expect(second.at(-1)?.content).toContain("finish");
    expect((await transitionsOf(store, "s1")).map((t) => `${t.from}->${t.to}`)).toEqual([
      "idle->running", "running->running", "running->waiting-tools", "waiting-tools->done",
    ]);
  });

  it("a turn that keeps answering with text fails with step_budget_exhausted after stepLimit steps", async () => {
    const model = recordingModel(() => ({ text: "still thinking" }));
    const agent = defineAgent({ name: "chatty", instructions: "", model, mustEndWith: ["submit_result"], stepLimit: 3 });
    const { gh, clock, store } = setup([agent]);
    const { turnId } = await enqueue(store, clock, "c1", agent, "go");
    await gh.drain();

    expect((await head(store, "c1")).state).toBe("failed");
    expect((await ctxOf(store, "c1")).error?.reason).toBe("step_budget_exhausted");
    expect(model.requests).toHaveLength(3);
    const [task] = await eventsOf(store, "c1", "task");
    expect(task.data).toMatchObject({ turnId, status: "failed", deliverable: null, error: { reason: "step_budget_exhausted" } });
  });

  it("without stepLimit a turn still has a step budget (32 by default)", async () => {
    const model = recordingModel(() => ({ text: "again" }));
    const agent = defineAgent({ name: "loop", instructions: "", model, mustEndWith: ["submit_result"] });
    expect(agent.stepLimit).toBe(32);
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "l1", agent, "go");
    await gh.drain();
    const ctx = await ctxOf(store, "l1");
    expect(ctx.config.maxSteps).toBe(32);
    expect(ctx.error?.reason).toBe("step_budget_exhausted");
    expect(model.requests).toHaveLength(32);
  });
});

describe("terminate", () => {
  it("a tool returning terminate(value) ends the turn with that value and no further model call", async () => {
    let otherRan = 0;
    const close = defineTool({
      name: "close_ticket",
      description: "Close",
      parameters: z.object({ id: z.number() }),
      execute: ({ id }) => terminate({ closed: id }),
    });
    const note = defineTool({ name: "note", description: "Note", parameters: z.object({}), execute: () => ++otherRan });
    const model = recordingModel(() => ({ toolCalls: [{ name: "close_ticket", args: { id: 9 } }, { name: "note", args: {} }] }));
    const agent = defineAgent({ name: "closer", instructions: "", model, tools: [close, note] });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "t1", agent, "close 9");
    await gh.drain();

    expect((await head(store, "t1")).state).toBe("done");
    expect((await ctxOf(store, "t1")).output).toEqual({ closed: 9 });
    expect(model.requests).toHaveLength(1);
    const [task] = await eventsOf(store, "t1", "task");
    expect(task.data.deliverable).toEqual({ closed: 9 });
    // Every call of the step still gets its one tool message.
    const msgs = await store.readMessages("t1");
    const step = msgs.find((m) => m.role === "assistant")!;
    for (const c of step.toolCalls!) expect(toolMessages(msgs, c.id)).toHaveLength(1);
  });

  it('an external result with afterExecution "terminate" ends the turn with its value', async () => {
    const model = recordingModel(() => ({ toolCalls: [{ name: "ask_human", args: { question: "approve?" } }] }));
    const agent = defineAgent({ name: "approver", instructions: "", model, tools: [askHuman] });
    const { gh, clock, store } = setup([agent]);
    const { turnId } = await enqueue(store, clock, "e1", agent, "approve");
    await gh.drain();
    const [call] = await store.getToolCalls("e1", turnId);
    await store.deliverToolResult({
      agentId: "e1", turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: { approved: true } }, afterExecution: "terminate", source: "http", now: clock.now(),
    });
    await gh.drain();
    expect((await head(store, "e1")).state).toBe("done");
    expect((await ctxOf(store, "e1")).output).toEqual({ approved: true });
    expect(model.requests).toHaveLength(1);
  });
});

describe("submit_result", () => {
  it("is applied once per turn: a second call in the same step is not executed", async () => {
    const model = recordingModel(() => ({
      toolCalls: [{ name: "submit_result", args: { result: "first" } }, { name: "submit_result", args: { result: "second" } }],
    }));
    const agent = defineAgent({ name: "twice", instructions: "", model });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "d1", agent, "go");
    await gh.drain();

    expect((await ctxOf(store, "d1")).output).toBe("first");
    const tasks = await eventsOf(store, "d1", "task");
    expect(tasks).toHaveLength(1);
    expect(tasks[0].data.deliverable).toBe("first");
    const msgs = await store.readMessages("d1");
    const [a, b] = msgs.find((m) => m.role === "assistant")!.toolCalls!;
    expect(toolMessages(msgs, a.id).map((m) => m.content)).toEqual(["Result submitted; the turn is complete."]);
    const second = toolMessages(msgs, b.id);
    expect(second).toHaveLength(1);
    expect(JSON.parse(second[0].content).error.type).toBe("not_executed");
    expect(model.requests).toHaveLength(1);
  });

  it("delivers its `result` field, or all of its arguments when there is none", async () => {
    const withField = defineAgent({ name: "f1", instructions: "", model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: { n: 1 } } }] }]) });
    const without = defineAgent({ name: "f2", instructions: "", model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { n: 2, ok: true } }] }]) });
    const { gh, clock, store } = setup([withField, without]);
    await enqueue(store, clock, "x1", withField, "go");
    await enqueue(store, clock, "x2", without, "go");
    await gh.drain();
    expect((await ctxOf(store, "x1")).output).toEqual({ n: 1 });
    expect((await ctxOf(store, "x2")).output).toEqual({ n: 2, ok: true });
  });
});

describe("tool specs", () => {
  it("offers zod-derived JSON Schemas of the allowed tools, with fixed arguments hidden, defaults optional and submit_result last", async () => {
    const seen: Array<Record<string, unknown>> = [];
    const search = defineTool({
      name: "search",
      description: "Search the docs",
      parameters: z.object({ query: z.string().describe("what to find"), limit: z.number().int(), tenant: z.string() }),
      defaults: { limit: 10 },
      fixed: { tenant: "acme" },
      execute: (args) => {
        seen.push(args);
        return "hits";
      },
    });
    const hidden = defineTool({ name: "delete_all", description: "Not for the model", parameters: z.object({}), execute: () => "gone" });
    let tools: ToolSpec[] = [];
    const model = recordingModel((req) => {
      tools = req.tools;
      return req.step === 1
        ? { toolCalls: [{ name: "search", args: { query: "refunds", tenant: "evil" } }, { name: "search", args: { query: "x", limit: 3 } }] }
        : { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] };
    });
    const agent = defineAgent({ name: "docs", instructions: "", model, tools: [search, hidden], allowedTools: ["search"] });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "p1", agent, "find");
    await gh.drain();

    expect(tools.map((t) => t.function.name)).toEqual(["search", "submit_result"]);
    const spec = tools[0];
    expect(spec.type).toBe("function");
    expect(spec.function.description).toBe("Search the docs");
    const params = spec.function.parameters as { type: string; properties: Record<string, any>; required: string[] };
    expect(params.type).toBe("object");
    expect(Object.keys(params.properties).sort()).toEqual(["limit", "query"]);
    expect(params.properties.query).toMatchObject({ type: "string", description: "what to find" });
    expect(params.required).toEqual(["query"]);
    expect(JSON.stringify(tools)).not.toContain("tenant");
    expect(JSON.stringify(tools)).not.toContain("acme");
    expect((tools[1].function.parameters as any).properties).toHaveProperty("result");

    // Defaults fill what the model omitted; fixed values win over what it sent.
    expect(seen).toEqual([{ query: "refunds", limit: 10, tenant: "acme" }, { query: "x", limit: 3, tenant: "acme" }]);
  });

  it("external calls are announced with defaults and fixed arguments applied", async () => {
    const ticket = defineTool({
      name: "open_ticket",
      description: "Open a ticket",
      parameters: z.object({ title: z.string(), priority: z.string(), queue: z.string() }),
      defaults: { priority: "low" },
      fixed: { queue: "billing" },
    });
    const agent = defineAgent({
      name: "ticketer",
      instructions: "",
      model: scriptedModel([{ toolCalls: [{ name: "open_ticket", args: { title: "Refund", queue: "other" } }] }]),
      tools: [ticket],
    });
    const { gh, clock, store } = setup([agent]);
    const { turnId } = await enqueue(store, clock, "o1", agent, "go");
    await gh.drain();
    const [call] = await store.getToolCalls("o1", turnId);
    expect(call.args).toEqual({ title: "Refund", priority: "low", queue: "billing" });
    const announced = (await eventsOf(store, "o1", "tool_call")).map((e) => e.data.args);
    expect(announced).toEqual([{ title: "Refund", priority: "low", queue: "billing" }]);
  });
});

describe("tool errors are outcomes the model sees", () => {
  it("an unknown tool, invalid arguments, a ToolError and a thrown exception become typed error results", async () => {
    let executed = 0;
    const strict = defineTool({
      name: "charge",
      description: "Charge",
      parameters: z.object({ cents: z.number().int().positive() }),
      execute: () => {
        executed++;
        return "charged";
      },
    });
    const flaky = defineTool({
      name: "flaky",
      description: "Fails",
      parameters: z.object({}),
      execute: () => {
        throw new ToolError({ type: "rate_limited", message: "slow down", retriable: true, metadata: { retryAfterMs: 50 } });
      },
    });
    const broken = defineTool({
      name: "broken",
      description: "Throws",
      parameters: z.object({}),
      execute: () => {
        throw new TypeError("x is undefined");
      },
    });
    const model = recordingModel((req) =>
      req.step === 1
        ? {
          toolCalls: [
            { id: "u1", name: "no_such_tool", args: {} },
            { id: "u2", name: "charge", args: { cents: "ten" } },
            { id: "u3", name: "flaky", args: {} },
            { id: "u4", name: "broken", args: {} },
          ],
        }
        : { toolCalls: [{ name: "submit_result", args: { result: "handled" } }] }
    );
    const agent = defineAgent({ name: "errs", instructions: "", model, tools: [strict, flaky, broken] });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "r1", agent, "go");
    await gh.drain();

    expect((await head(store, "r1")).state).toBe("done");
    expect(executed).toBe(0);
    const msgs = model.requests[1].messages;
    const errorOf = (id: string) => JSON.parse(toolMessages(msgs, id)[0].content).error;
    expect(errorOf("u1")).toMatchObject({ type: "tool_not_offered", retryable: false });
    expect(errorOf("u1").message).toContain("no_such_tool");
    expect(errorOf("u2")).toMatchObject({ type: "invalid_arguments", retryable: true });
    expect(errorOf("u2").message).toContain("charge");
    expect(errorOf("u3")).toEqual({ type: "rate_limited", message: "slow down", retryable: true, metadata: { retryAfterMs: 50 } });
    expect(errorOf("u4")).toMatchObject({ type: "tool_exception", message: "x is undefined" });
  });

  it("a tool not in allowedTools is not offered to the model and never runs", async () => {
    let ran = 0;
    const secret = defineTool({ name: "secret", description: "s", parameters: z.object({}), execute: () => ++ran });
    const model = recordingModel((req) =>
      req.step === 1 ? { toolCalls: [{ id: "s1", name: "secret", args: {} }] } : { text: "ok" }
    );
    const agent = defineAgent({ name: "allow", instructions: "", model, tools: [lookup, secret], allowedTools: ["lookup"] });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "al", agent, "go");
    await gh.drain();
    expect(ran).toBe(0);
    expect(model.requests[0].tools.map((t) => t.function.name)).toEqual(["lookup", "submit_result"]);
    expect(JSON.parse(toolMessages(model.requests[1].messages, "s1")[0].content).error.type).toBe("tool_not_offered");
  });
});

describe("usage, cost and events", () => {
  it("records usage and cost per step, indexes tool call ids, streams chunks and publishes the deliverable", async () => {
    const slow = defineTool({ name: "slow_check", description: "External check", parameters: z.object({}), timeoutMs: 5_000 });
    const agent = defineAgent({
      name: "meter",
      instructions: "",
      model: scriptedModel([
        { text: "Checking now.", toolCalls: [{ id: "k1", name: "slow_check", args: {} }, { id: "k2", name: "ask_human", args: { question: "q" } }], usage: { inputTokens: 100, outputTokens: 20 }, cost: 0.25 },
        { text: "The answer is 42", usage: { inputTokens: 150, outputTokens: 30 }, cost: 0.5 },
      ]),
      tools: [slow, askHuman],
    });
    const { gh, clock, store } = setup([agent], { externalToolTimeoutMs: 90_000 });
    const t0 = clock.now();
    const { turnId } = await enqueue(store, clock, "m1", agent, "go");
    await gh.drain();

    const announced = await eventsOf(store, "m1", "tool_call");
    expect(announced.map((e) => e.data)).toEqual([
      expect.objectContaining({ toolCallId: "k1", name: "slow_check", external: true, deadline: t0 + 5_000 }),
      expect.objectContaining({ toolCallId: "k2", name: "ask_human", external: true, deadline: t0 + 90_000 }),
    ]);
    for (const id of ["k1", "k2"]) {
      await store.deliverToolResult({ agentId: "m1", turnId, toolCallId: id, outcome: { ok: true, value: id }, afterExecution: "continue", source: "http", now: clock.now() });
    }
    await gh.drain();

    const completed = (await eventsOf(store, "m1", "step")).filter((e) => e.data.phase === "completed");
    expect(completed.map((e) => e.data)).toEqual([
      expect.objectContaining({ step: 1, llmUsage: { inputTokens: 100, outputTokens: 20 }, llmResponseCost: 0.25, toolCallIds: ["k1", "k2"] }),
      expect.objectContaining({ step: 2, llmUsage: { inputTokens: 150, outputTokens: 30 }, llmResponseCost: 0.5, toolCallIds: [] }),
    ]);
    const ctx = await ctxOf(store, "m1");
    expect(ctx.usage).toEqual({ inputTokens: 250, outputTokens: 50, cost: 0.75, steps: 2 });
    expect(ctx.turnUsage).toEqual(ctx.usage);

    const chunks = await eventsOf(store, "m1", "chunk");
    expect(chunks.filter((c) => c.data.step === 2).map((c) => c.data.text).join("")).toBe("The answer is 42");
    expect(chunks.filter((c) => c.data.step === 1).map((c) => c.data.text).join("")).toBe("Checking now.");

    const tasks = await eventsOf(store, "m1", "task");
    expect(tasks).toHaveLength(1);
    expect(tasks[0].data).toMatchObject({ turnId, status: "done", deliverable: "The answer is 42", usage: ctx.turnUsage });
  });
});

describe("model errors", () => {
  const failing = (failures: number, err: () => Error) =>
    recordingModel((_req, i) => {
      if (i < failures) throw err();
      return { text: "recovered" };
    });

  it("a retryable model error is retried within modelAttempts", async () => {
    const model = failing(2, () => new ModelError("overloaded"));
    const agent = defineAgent({ name: "retry", instructions: "", model, modelAttempts: 3 });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "me1", agent, "go");
    await gh.drain();
    expect((await head(store, "me1")).state).toBe("done");
    expect((await ctxOf(store, "me1")).output).toBe("recovered");
    expect(model.requests).toHaveLength(3);
    expect((await eventsOf(store, "me1", "model_error")).map((e) => e.data.attempt)).toEqual([1, 2]);
  });

  it("past modelAttempts the turn fails with model_error", async () => {
    const model = failing(99, () => new Error("socket hang up"));
    const agent = defineAgent({ name: "down", instructions: "", model, modelAttempts: 2 });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "me2", agent, "go");
    await gh.drain();
    const ctx = await ctxOf(store, "me2");
    expect((await head(store, "me2")).state).toBe("failed");
    expect(ctx.error).toEqual({ reason: "model_error", message: "socket hang up" });
    expect(model.requests).toHaveLength(2);
  });

  it("a non-retryable ModelError fails the turn at once", async () => {
    const model = failing(99, () => new ModelError("invalid api key", { retryable: false }));
    const agent = defineAgent({ name: "badkey", instructions: "", model, modelAttempts: 5 });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "me3", agent, "go");
    await gh.drain();
    expect((await ctxOf(store, "me3")).error).toEqual({ reason: "model_error", message: "invalid api key" });
    expect(model.requests).toHaveLength(1);
  });
});

describe("cancel", () => {
  it("a cancel while waiting for tools fails the turn with reason cancelled and refuses late results", async () => {
    const model = recordingModel(() => ({ toolCalls: [{ name: "ask_human", args: { question: "?" } }] }));
    const agent = defineAgent({ name: "cancellable", instructions: "", model, tools: [askHuman] });
    const { gh, clock, store } = setup([agent]);
    const { turnId } = await enqueue(store, clock, "k1", agent, "go");
    await gh.drain();
    expect((await head(store, "k1")).state).toBe("waiting-tools");

    expect((await store.requestCancel({ agentId: "k1", reason: "user closed the chat", now: clock.now() })).status).toBe("accepted");
    await gh.drain();

    const h = await head(store, "k1");
    expect(h.state).toBe("failed");
    expect(h.activeTurnId).toBeNull();
    expect((await ctxOf(store, "k1")).error).toEqual({ reason: "cancelled", message: "user closed the chat" });
    expect(model.requests).toHaveLength(1);
    const [call] = await store.getToolCalls("k1", turnId);
    const msgs = await store.readMessages("k1");
    expect(JSON.parse(toolMessages(msgs, call.toolCallId)[0].content).error.type).toBe("cancelled");

    const late = await store.deliverToolResult({
      agentId: "k1", turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: "too late" }, afterExecution: "continue", source: "http", now: clock.now(),
    });
    expect(late.status).toBe("turn_finished");
    await gh.drain();
    expect((await head(store, "k1")).state).toBe("failed");
    expect(await store.readMessages("k1")).toEqual(msgs);
    expect((await store.requestCancel({ agentId: "k1", reason: "again", now: clock.now() })).status).toBe("not_active");
  });
});

describe("cancel while a worker runs the turn", () => {
  it("a cancel that arrives during a long in-process turn stops it at the next step, not at the end of the turn", async () => {
    let first = true;
    const started = deferred<void>();
    const crunch = defineTool({
      name: "crunch",
      description: "Crunch",
      parameters: z.object({}),
      execute: async () => {
        if (first) started.resolve();
        first = false;
        await new Promise((r) => setTimeout(r, 15));
        return "more";
      },
    });
    const model = recordingModel(() => ({ toolCalls: [{ name: "crunch", args: {} }] }));
    const agent = defineAgent({ name: "cruncher", instructions: "", model, tools: [crunch], stepLimit: 60 });
    // A short lease: the worker renews it (and looks for new mail) every 50 ms of real time.
    const { gh, clock, store } = setup([agent], { leaseMs: 150 });
    await enqueue(store, clock, "lc", agent, "go");
    const draining = gh.drain();
    await started.promise;
    expect((await store.requestCancel({ agentId: "lc", reason: "taking too long", now: clock.now() })).status).toBe("accepted");
    await draining;
    await gh.drain();

    expect((await head(store, "lc")).state).toBe("failed");
    expect((await ctxOf(store, "lc")).error).toEqual({ reason: "cancelled", message: "taking too long" });
    expect(model.requests.length).toBeLessThan(30);
  });
});

describe("long-lived agents", () => {
  it("a task after done starts a new turn that sees the earlier conversation", async () => {
    const model = recordingModel((req) => {
      const lastUser = [...req.messages].reverse().find((m) => m.role === "user")!;
      return { text: `answer to ${lastUser.content}` };
    });
    const agent = defineAgent({ name: "memo", instructions: "Remember.", model });
    const { gh, clock, store } = setup([agent]);
    const first = await enqueue(store, clock, "mem", agent, "my name is Ada");
    await gh.drain();
    const second = await enqueue(store, clock, "mem", agent, "what is my name?");
    await gh.drain();

    expect(second.turnId).not.toBe(first.turnId);
    expect(model.requests[1].messages).toEqual([
      { role: "system", content: "Remember." },
      { role: "user", content: "my name is Ada" },
      { role: "assistant", content: "answer to my name is Ada" },
      { role: "user", content: "what is my name?" },
    ]);
    const ctx = await ctxOf(store, "mem");
    expect(ctx.turns).toBe(2);
    expect(ctx.turnId).toBe(second.turnId);
    expect((await eventsOf(store, "mem", "task")).map((e) => [e.data.turnId, e.data.deliverable])).toEqual([
      [first.turnId, "answer to my name is Ada"],
      [second.turnId, "answer to what is my name?"],
    ]);
  });

  it("a task enqueued while a turn runs waits until that turn has ended", async () => {
    const gate = deferred<void>();
    const entered = deferred<void>();
    const model = recordingModel(async (req) => {
      if (req.turnId === firstTurn) {
        entered.resolve();
        await gate.promise;
      }
      return { text: `done ${req.messages.filter((m) => m.role === "user").length}` };
    });
    let firstTurn = "";
    const agent = defineAgent({ name: "queue", instructions: "", model });
    const { gh, clock, store } = setup([agent], { concurrency: 3 });
    firstTurn = (await enqueue(store, clock, "q1", agent, "one")).turnId;
    const draining = gh.drain();
    await entered.promise;
    const secondTurn = (await enqueue(store, clock, "q1", agent, "two")).turnId;
    let h = await head(store, "q1");
    expect(h.activeTurnId).toBe(firstTurn);
    expect(h.pendingTasks).toBe(1);
    // No other worker may start the queued task while the first turn runs.
    expect((await store.claim({ agentId: "q1", workerId: "intruder", leaseMs: 1_000, now: clock.now() })).status).toBe("busy");
    gate.resolve();
    await draining;
    await gh.drain();

    h = await head(store, "q1");
    expect(h.state).toBe("done");
    expect(h.pendingTasks).toBe(0);
    expect(model.requests.map((r) => r.turnId)).toEqual([firstTurn, secondTurn]);
    const ts = await transitionsOf(store, "q1");
    expect(ts.map((t) => `${t.from}->${t.to}`)).toEqual(["idle->running", "running->done", "done->running", "running->done"]);
    expect((await ctxOf(store, "q1")).output).toBe("done 2");
  });

  it("all pending mail of an agent is applied in order by one claim (greedy batch)", async () => {
    const model = recordingModel((req) =>
      req.step === 1
        ? { toolCalls: ["a", "b", "c"].map((id) => ({ id, name: "ask_human", args: { question: id } })) }
        : { text: req.messages.filter((m) => m.role === "tool").map((m) => m.content).join(",") }
    );
    const agent = defineAgent({ name: "batch", instructions: "", model, tools: [askHuman] });
    const { gh, clock, store } = setup([agent]);
    const { turnId } = await enqueue(store, clock, "g1", agent, "go");
    await gh.drain();
    const epochBefore = (await head(store, "g1")).epoch;
    for (const id of ["c", "a", "b"]) {
      clock.advance(10);
      await store.deliverToolResult({ agentId: "g1", turnId, toolCallId: id, outcome: { ok: true, value: id.toUpperCase() }, afterExecution: "continue", source: "http", now: clock.now() });
    }
    expect((await head(store, "g1")).pendingMail).toBe(3);
    const claims = await gh.drain();

    expect(claims).toBe(1);
    const h = await head(store, "g1");
    expect(h.epoch).toBe(epochBefore + 1);
    expect(h.pendingMail).toBe(0);
    const results = (await transitionsOf(store, "g1")).filter((t) => t.event.type === "TOOL_RESULT");
    expect(results.map((t) => [t.event.toolCallId, t.to])).toEqual([["c", "waiting-tools"], ["a", "waiting-tools"], ["b", "running"]]);
    expect((await ctxOf(store, "g1")).output).toBe("C,A,B");
    expect(model.requests).toHaveLength(2);
  });
});

describe("the event log", () => {
  it("replaying the logged transitions reproduces the stored snapshot, across turns, tools, reminders and cancels", async () => {
    const finish = defineTool({ name: "finish", description: "End", parameters: z.object({ v: z.number() }), execute: ({ v }) => terminate(v) });
    const model = recordingModel((req) => {
      const turn = req.messages.filter((m) => m.role === "user").length;
      if (turn === 2) return { toolCalls: [{ name: "ask_human", args: { question: "wait" } }] };
      if (req.step === 1) return { toolCalls: [{ name: "lookup", args: { email: "x@y.z" } }, { name: "ask_human", args: { question: "ok?" } }] };
      if (req.step === 2) return { text: "almost" };
      return { toolCalls: [{ name: "finish", args: { v: req.step } }] };
    });
    const agent = defineAgent({ name: "replayed", instructions: "", model, tools: [lookup, askHuman, finish], mustEndWith: ["finish"] });
    const { gh, clock, store } = setup([agent]);
    const check = async () => {
      const h = await head(store, "rp");
      expect(await replayLog(store, "rp")).toEqual(h.snapshot);
      expect((h.snapshot as { context: { schemaVersion: number } }).context.schemaVersion).toBe(SNAPSHOT_SCHEMA_VERSION);
    };
    const t1 = await enqueue(store, clock, "rp", agent, "first");
    await gh.drain();
    await check();
    const ask = (await store.getToolCalls("rp", t1.turnId)).find((c) => c.name === "ask_human")!;
    await store.deliverToolResult({ agentId: "rp", turnId: t1.turnId, toolCallId: ask.toolCallId, outcome: { ok: true, value: "ok" }, afterExecution: "continue", source: "http", now: clock.now() });
    await gh.drain();
    expect((await ctxOf(store, "rp")).output).toBe(3);
    await check();
    await enqueue(store, clock, "rp", agent, "second");
    await gh.drain();
    await store.requestCancel({ agentId: "rp", reason: "enough", now: clock.now() });
    await gh.drain();
    expect((await head(store, "rp")).state).toBe("failed");
    await check();
  });
});

describe("idempotency", () => {
  it("a duplicate idempotency key enqueues nothing and answers the first turn id", async () => {
    const model = recordingModel(() => ({ text: "ok" }));
    const agent = defineAgent({ name: "idem", instructions: "", model });
    const { gh, clock, store } = setup([agent]);
    const a = await enqueue(store, clock, "i1", agent, "charge once", { idempotencyKey: "order-77" });
    const state = memoryStateReader(store);
    let before = await state("i1");
    const b = await enqueue(store, clock, "i1", agent, "charge once", { idempotencyKey: "order-77" });
    expect(a.status).toBe("enqueued");
    expect(b).toEqual({ status: "duplicate", turnId: a.turnId });
    expect(await state("i1")).toEqual(before);
    await gh.drain();
    before = await state("i1");
    const c = await enqueue(store, clock, "i1", agent, "charge once", { idempotencyKey: "order-77" });
    expect(c).toEqual({ status: "duplicate", turnId: a.turnId });
    expect(await state("i1")).toEqual(before);
    await gh.drain();
    expect(model.requests).toHaveLength(1);
    expect((await ctxOf(store, "i1")).turns).toBe(1);
    expect(await eventsOf(store, "i1", "task_enqueued")).toHaveLength(1);
  });
});
