/**
 * Delegation (agentTool(), actors/delegation/delegation.ts) through createGatehouse()
 * with a hand-driven clock, run on every store: the child's (verified)
 * result reaches the parent through the first-wins delivery, a failed child
 * arrives as an error outcome, cancels and timeouts reach the children,
 * nesting is bounded, the timelines link both ways, and a lost push or a
 * lost dispatch is repaired by the parent's pull. Crash tests with killed
 * worker processes are in faults-delegation.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { agentTool } from "../../agents/agent-tool.ts";
import { type AnyAgent, defineAgent } from "../../agents/define.ts";
import { childAgentId, childTurnIdOf, deliverChildResult, dispatchChild, isLinkedChild } from "../../actors/delegation/delegation.ts";
import { watchdogTick } from "../../actors/pool/watchdog.ts";
import { silentLogger } from "../../actors/runtime.ts";
import { ModelError } from "../../errors/errors.ts";
import { createGatehouse, type Gatehouse, type GatehouseOptions } from "../../gatehouse.ts";
import type { ModelRequest, ModelResponse } from "../../models/types.ts";
import type { Store } from "../../store/port.ts";
import { defineTool } from "../../tools/define.ts";
import { manualClock } from "./clock.ts";
import { ctxOf, deferred, enqueue, eventsOf, head, recordingModel, replayLog } from "./host.ts";

const POLL = 5_000;

/** The tool message content the model saw for the first tool call of step 1. */
const toolReply = (req: ModelRequest) => req.messages.filter((m) => m.role === "tool").map((m) => parseOr(m.content as string));
const parseOr = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/** A parent that calls `tool` with `args` once, then submits what it saw. */
function parentOf(name: string, tools: ReturnType<typeof agentTool>[], calls: Array<{ name: string; args: unknown }>) {
  const model = recordingModel((req) => {
    if (req.step === 1) return { toolCalls: calls.map((c) => ({ name: c.name, args: c.args })) };
    return { toolCalls: [{ name: "submit_result", args: { result: toolReply(req) } }] };
  });
  return { model, agent: defineAgent({ name, instructions: "Delegate.", model, tools }) };
}

/** A child that answers every task with `respond(input)`. */
function childOf(name: string, respond: (req: ModelRequest) => ModelResponse, extra: Partial<Parameters<typeof defineAgent>[0]> = {}) {
  const model = recordingModel(respond);
  return { model, agent: defineAgent({ name, instructions: "Work.", model, ...extra }) };
}

const taskText = (req: ModelRequest) => String(req.messages.find((m) => m.role === "user")?.content ?? "");

export function delegationSuite(kind: string, makeStore: () => Promise<{ store: Store; cleanup?: () => Promise<void> }>) {
  describe(`delegation on ${kind}`, () => {
    const open: Array<{ gh: Gatehouse; cleanup?: () => Promise<void> }> = [];
    afterEach(async () => {
      while (open.length) {
        const o = open.pop()!;
        await o.gh.close();
        await o.cleanup?.();
      }
    });

    async function setup(agents: AnyAgent[], over: Partial<GatehouseOptions> & { wrap?: (s: Store) => Store } = {}) {
      const { store: base, cleanup } = await makeStore();
      const store = over.wrap ? over.wrap(base) : base;
      const { wrap: _w, ...rest } = over;
      const clock = manualClock();
      const gh = createGatehouse({ agents, store, clock, leaseMs: 30_000, concurrency: 2, delegation: { pollMs: POLL }, ...rest });
      open.push({ gh, cleanup });
      return { gh, clock, store: gh.store };
    }

    it("a call runs the child as a task and hands its result back through the first-wins delivery", async () => {
      const child = childOf("researcher", (req) => ({ toolCalls: [{ name: "submit_result", args: { result: { facts: `about ${taskText(req)}` } } }] }));
      const tool = agentTool(child.agent, { description: "Ask the researcher" });
      const parent = parentOf("lead", [tool], [{ name: "researcher", args: { input: "otters" } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      expect(gh.agents.get("researcher")).toBe(child.agent); // served without being listed

      const { turnId } = await enqueue(store, clock, "p1", parent.agent, "go");
      await gh.drain();

      const h = await head(store, "p1");
      expect(h.state).toBe("done");
      const [call] = await store.getToolCalls("p1", turnId);
      expect(call).toMatchObject({ name: "researcher", external: true, status: "resolved", source: "delegation", outcome: { ok: true, value: { facts: "about otters" } } });
      expect((await ctxOf(store, "p1")).output).toEqual([{ facts: "about otters" }]);

      // The child's id is derived from the parent, its turn and the call; both timelines name the other.
      const childId = await childAgentId("p1", turnId, call.toolCallId, "researcher");
      expect(childId).toMatch(/^p1\.researcher\.[0-9a-f]{16}$/);
      const started = (await eventsOf(store, "p1", "delegation_started"))[0].data;
      expect(started).toMatchObject({ toolCallId: call.toolCallId, childAgentId: childId, childAgent: "researcher", depth: 1 });
      const by = (await eventsOf(store, childId, "delegated_by"))[0].data;
      expect(by).toMatchObject({ parentAgentId: "p1", parentTurnId: turnId, toolCallId: call.toolCallId, depth: 1 });
      expect((await head(store, childId)).state).toBe("done");
      expect(child.model.requests).toHaveLength(1);
      expect(taskText(child.model.requests[0])).toBe("otters");
      // The parent's log still replays to its snapshot.
      expect(await replayLog(store, "p1")).toEqual(h.snapshot);
    });

    it("a child with a verifier hands over its verified output, not its candidate", async () => {
      const child = childOf("checker", () => ({ toolCalls: [{ name: "agent_output", args: { answer: "42" } }] }), {
        output: {
          schema: z.object({ answer: z.string() }),
          verify: (c: unknown) => ({ answer: Number((c as { answer: string }).answer), checked: true }),
        },
      });
      const parent = parentOf("asker", [agentTool(child.agent)], [{ name: "checker", args: { input: { question: "6*7" } } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      const { turnId } = await enqueue(store, clock, "p2", parent.agent, "go");
      await gh.drain();
      const [call] = await store.getToolCalls("p2", turnId);
      expect(call.outcome).toEqual({ ok: true, value: { answer: 42, checked: true } });
      expect(taskText(child.model.requests[0])).toBe(JSON.stringify({ question: "6*7" }));
    });

    it("a failed child arrives as an error outcome the parent's model reads", async () => {
      const child = childOf("flaky", () => {
        throw new ModelError("provider down", { retryable: false });
      });
      const parent = parentOf("boss", [agentTool(child.agent)], [{ name: "flaky", args: { input: "x" } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      const { turnId } = await enqueue(store, clock, "p3", parent.agent, "go");
      await gh.drain();
      const [call] = await store.getToolCalls("p3", turnId);
      expect(call.outcome).toMatchObject({ ok: false, error: { type: "delegation_failed", retryable: false, metadata: { reason: "model_error" } } });
      expect((call.outcome as { error: { message: string } }).error.message).toMatch(/^Agent ".*flaky.*" failed its task: model_error: provider down/);
      expect((await head(store, "p3")).state).toBe("done");
      expect(parent.model.requests[1].messages.at(-1)!.content).toContain("delegation_failed");
    });

    it("cancelling the parent cancels its child", async () => {
      const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({ q: z.string() }) });
      const child = childOf("slow", () => ({ toolCalls: [{ name: "ask_human", args: { q: "?" } }] }), { tools: [ask] });
      const parent = parentOf("impatient", [agentTool(child.agent)], [{ name: "slow", args: { input: "x" } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      const { turnId } = await enqueue(store, clock, "p4", parent.agent, "go");
      await gh.drain();
      const [call] = await store.getToolCalls("p4", turnId);
      const childId = await childAgentId("p4", turnId, call.toolCallId, "slow");
      expect((await head(store, childId)).state).toBe("waiting-tools");

      expect((await store.requestCancel({ agentId: "p4", reason: "user stop", now: clock.now() })).status).toBe("accepted");
      await gh.drain();
      expect((await head(store, "p4")).state).toBe("failed");
      const c = await ctxOf(store, childId);
      expect((await head(store, childId)).state).toBe("failed");
      expect(c.error).toMatchObject({ reason: "cancelled" });
      expect(c.error!.message).toMatch(/parent's turn ended \(cancelled\)/);
    });

    it("a parent's cancel ends its child's turn at the child's next commit, even in the middle of a model step that would finish it", { timeout: 60_000 }, async () => {
      const started = deferred<void>();
      const gate = deferred<void>();
      const child = childOf("midstep", () => ({ toolCalls: [{ name: "submit_result", args: { result: "finished anyway" } }] }));
      const held = recordingModel(async (req, i) => {
        if (i === 0) {
          started.resolve();
          await gate.promise;
        }
        return child.model.generate(req);
      });
      const childAgent = defineAgent({ name: "midstep", instructions: "Work.", model: held });
      const parent = parentOf("canceller", [agentTool(childAgent)], [{ name: "midstep", args: { input: "x" } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      const { turnId } = await enqueue(store, clock, "pc", parent.agent, "go");
      const draining = gh.drain();
      await started.promise; // the child's first model step is running (and would end its turn)
      const [call] = await store.getToolCalls("pc", turnId);
      const childId = await childAgentId("pc", turnId, call.toolCallId, "midstep");
      expect((await store.requestCancel({ agentId: "pc", reason: "user stop", now: clock.now() })).status).toBe("accepted");
      await gh.drain(); // the parent's cancel; the child's worker still holds the child
      expect((await head(store, "pc")).state).toBe("failed");
      expect((await eventsOf(store, childId, "cancel_requested")).map((e) => e.turnId)).toEqual([(await head(store, childId)).activeTurnId]);
      gate.resolve();
      await draining;
      await gh.drain();

      const h = await head(store, childId);
      expect(h.state).toBe("failed");
      expect((await ctxOf(store, childId)).error).toMatchObject({ reason: "cancelled" });
      expect(await eventsOf(store, childId, "mail_ignored")).toEqual([]);
      const ended = (await eventsOf(store, childId, "task")).map((e) => e.data.status);
      expect(ended).toEqual(["failed"]);
      // The step that was running never committed: no submit_result reached the child's log.
      expect((await eventsOf(store, childId, "tool_call")).length).toBe(0);
      expect(await replayLog(store, childId)).toEqual(h.snapshot);
    });

    it("a deleted child ends the parent's call with child_deleted and is never created again", { timeout: 60_000 }, async () => {
      const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({ q: z.string() }) });
      const child = childOf("deletable", () => ({ toolCalls: [{ name: "ask_human", args: { q: "?" } }] }), { tools: [ask] });
      const parent = parentOf("orphaned", [agentTool(child.agent)], [{ name: "deletable", args: { input: "x" } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      const { turnId } = await enqueue(store, clock, "pd", parent.agent, "go");
      await gh.drain();
      const [call] = await store.getToolCalls("pd", turnId);
      const childId = await childAgentId("pd", turnId, call.toolCallId, "deletable");
      const childTurn = await childTurnIdOf("pd", turnId, call.toolCallId);
      expect((await head(store, childId)).state).toBe("waiting-tools");

      const res = await gh.fetch(new Request(`http://gh.test/v1/agents/${childId}`, { method: "DELETE" }));
      expect(res.status).toBe(200);
      await gh.drain();
      const [answered] = await store.getToolCalls("pd", turnId);
      expect(answered).toMatchObject({
        status: "resolved", source: "delegation",
        outcome: { ok: false, error: { type: "delegation_failed", retryable: false, metadata: { childAgentId: childId, childTurnId: childTurn, reason: "child_deleted" } } },
      });
      expect((await head(store, "pd")).state).toBe("done");
      expect(parent.model.requests[1].messages.at(-1)!.content).toContain("child_deleted");
      // Polls long after: the child is not created again and its task does not run again.
      for (let i = 0; i < 3; i++) {
        clock.advance(POLL * 2);
        await gh.drain();
      }
      expect(await store.getAgent(childId)).toBeNull();
      expect(child.model.requests).toHaveLength(1);
    });

    it("a child deleted behind the parent's back is not re-created by the parent's poll: the call fails with child_deleted", { timeout: 60_000 }, async () => {
      const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({ q: z.string() }) });
      const child = childOf("vanishing", () => ({ toolCalls: [{ name: "ask_human", args: { q: "?" } }] }), { tools: [ask] });
      const parent = parentOf("poller", [agentTool(child.agent)], [{ name: "vanishing", args: { input: "x" } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      const { turnId } = await enqueue(store, clock, "pv", parent.agent, "go");
      await gh.drain();
      const [call] = await store.getToolCalls("pv", turnId);
      const childId = await childAgentId("pv", turnId, call.toolCallId, "vanishing");
      // Straight through the store: no fast path, only the parent's poll can notice.
      expect(await store.deleteAgent(childId, clock.now())).toEqual({ status: "deleted" });
      clock.advance(POLL + 1);
      await gh.drain();
      expect(await store.getAgent(childId)).toBeNull();
      expect(child.model.requests).toHaveLength(1);
      const [answered] = await store.getToolCalls("pv", turnId);
      expect(answered.outcome).toMatchObject({ ok: false, error: { type: "delegation_failed", metadata: { reason: "child_deleted" } } });
      expect((await head(store, "pv")).state).toBe("done");
      // A plain task to the id still creates a new agent (the marker binds only delegations).
      const again = await store.enqueueTask({ agentId: childId, agentName: "vanishing", workerTarget: child.agent.workerTarget, input: "hi", options: {}, turnId: "turn_plain", now: clock.now() });
      expect(again).toEqual({ status: "enqueued", turnId: "turn_plain" });
    });

    it("a delegation past the nesting bound is refused with a typed error and never dispatched", async () => {
      const leaf = childOf("leaf", () => ({ toolCalls: [{ name: "submit_result", args: { result: "leaf" } }] }));
      const mid = parentOf("mid", [agentTool(leaf.agent)], [{ name: "leaf", args: { input: "x" } }]);
      const top = parentOf("top", [agentTool(mid.agent)], [{ name: "mid", args: { input: "y" } }]);
      const { gh, clock, store } = await setup([top.agent], { delegation: { pollMs: POLL, maxDepth: 1 } });
      const { turnId } = await enqueue(store, clock, "p5", top.agent, "go");
      await gh.drain();
      const [call] = await store.getToolCalls("p5", turnId);
      // mid ran at depth 1; its own call would be depth 2.
      expect(call.outcome).toMatchObject({ ok: true, value: [{ error: { type: "delegation_depth_exceeded", metadata: { depth: 2, maxDepth: 1 } } }] });
      expect(leaf.model.requests).toHaveLength(0);
    });

    it("nests three deep by default, and a grandchild's usage reaches the top through its parent", async () => {
      const leaf = childOf("leaf3", () => ({ toolCalls: [{ name: "submit_result", args: { result: "deep" } }], usage: { inputTokens: 7, outputTokens: 3 }, cost: 0.5 }));
      const b = parentOf("b3", [agentTool(leaf.agent)], [{ name: "leaf3", args: { input: "x" } }]);
      const a = parentOf("a3", [agentTool(b.agent)], [{ name: "b3", args: { input: "y" } }]);
      const top = parentOf("top3", [agentTool(a.agent)], [{ name: "a3", args: { input: "z" } }]);
      const { gh, clock, store } = await setup([top.agent]);
      await enqueue(store, clock, "p6", top.agent, "go");
      await gh.drain();
      expect((await ctxOf(store, "p6")).output).toEqual([[["deep"]]]);
      expect(leaf.model.requests).toHaveLength(1);
      const c = await ctxOf(store, "p6");
      expect(c.turnUsage).toMatchObject({ inputTokens: 7, outputTokens: 3, cost: 0.5 });
    });

    it("by default a fourth level is refused: depth 4 gets delegation_depth_exceeded", async () => {
      const d = childOf("d4", () => ({ toolCalls: [{ name: "submit_result", args: { result: "too deep" } }] }));
      const c = parentOf("c4", [agentTool(d.agent)], [{ name: "d4", args: { input: "x" } }]);
      const b = parentOf("b4", [agentTool(c.agent)], [{ name: "c4", args: { input: "x" } }]);
      const a = parentOf("a4", [agentTool(b.agent)], [{ name: "b4", args: { input: "x" } }]);
      const top = parentOf("top4", [agentTool(a.agent)], [{ name: "a4", args: { input: "x" } }]);
      const { gh, clock, store } = await setup([top.agent]);
      await enqueue(store, clock, "p6b", top.agent, "go");
      await gh.drain();
      expect(d.model.requests).toHaveLength(0);
      expect(c.model.requests).toHaveLength(2);
      expect((await ctxOf(store, "p6b")).output).toEqual([[[[{ error: expect.objectContaining({ type: "delegation_depth_exceeded", metadata: { depth: 4, maxDepth: 3 } }) }]]]]);
    });

    it("a re-dispatch never enqueues twice and a duplicate delivery changes nothing", async () => {
      const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({ q: z.string() }) });
      const child = childOf("worker", () => ({ toolCalls: [{ name: "ask_human", args: { q: "?" } }] }), { tools: [ask] });
      const tool = agentTool(child.agent);
      const parent = parentOf("owner", [tool], [{ name: "worker", args: { input: "x" } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      const { turnId } = await enqueue(store, clock, "p7", parent.agent, "go");
      await gh.drain();
      const [call] = await store.getToolCalls("p7", turnId);
      const childId = await childAgentId("p7", turnId, call.toolCallId, "worker");
      const dc = { parentAgentId: "p7", parentAgentName: "owner", parentTurnId: turnId, toolCallId: call.toolCallId, tool, args: { input: "x" }, depth: 1 };
      const deps = { store, clock, logger: silentLogger, agents: gh.agents };
      const again = await dispatchChild(deps, dc);
      // `duplicate` (idempotency key) or `enqueued` (a store's replay guard on the same proposed turn id): one task either way.
      expect(again).toMatchObject({ childAgentId: childId, childTurnId: await childTurnIdOf("p7", turnId, call.toolCallId) });
      expect(["duplicate", "enqueued"]).toContain(again.status);
      expect((await head(store, childId)).pendingTasks).toBe(0);
      // Several poll claims re-dispatch too: still one task.
      for (let i = 0; i < 3; i++) {
        clock.advance(POLL);
        await gh.drain();
      }
      expect((await eventsOf(store, childId, "delegated_by"))).toHaveLength(1);

      const link = { parentAgentId: "p7", parentAgentName: "owner", toolName: "worker", parentTurnId: turnId, toolCallId: call.toolCallId, depth: 1 };
      // Only the child answers the call (a fork of it carries the same link).
      expect(await isLinkedChild(childId, link)).toBe(true);
      expect(await isLinkedChild(`${childId}-fork`, link)).toBe(false);
      const d = { link, childAgentId: childId, childTurnId: "t", outcome: { ok: true as const, value: "v" }, tool, now: clock.now() };
      expect((await deliverChildResult(store, d)).status).toBe("accepted");
      expect((await deliverChildResult(store, d)).status).toBe("duplicate");
      await gh.drain();
      expect((await eventsOf(store, "p7", "transition")).filter((e) => (e.data as any).event.type === "TOOL_RESULT")).toHaveLength(1);
      expect((await head(store, "p7")).state).toBe("done");
    });

    it("a push lost after the child's turn ended is pulled by the parent's next poll", async () => {
      let dropPushes = 1;
      const wrap = (s: Store): Store =>
        new Proxy(s, {
          get(t, p, r) {
            if (p === "deliverToolResult") {
              return async (req: Parameters<Store["deliverToolResult"]>[0]) => {
                if (req.source === "delegation" && dropPushes-- > 0) throw new Error("connection reset");
                return await t.deliverToolResult(req);
              };
            }
            const v = Reflect.get(t, p, r);
            return typeof v === "function" ? v.bind(t) : v;
          },
        });
      const child = childOf("quick", () => ({ toolCalls: [{ name: "submit_result", args: { result: "fast" } }] }));
      const parent = parentOf("waiter", [agentTool(child.agent)], [{ name: "quick", args: { input: "x" } }]);
      const { gh, clock, store } = await setup([parent.agent], { wrap });
      const { turnId } = await enqueue(store, clock, "p8", parent.agent, "go");
      await gh.drain();
      expect((await head(store, "p8")).state).toBe("waiting-tools");
      expect((await head(store, "p8")).runnableAt).toBe(clock.now() + POLL);
      clock.advance(POLL);
      await gh.drain();
      expect((await head(store, "p8")).state).toBe("done");
      expect((await store.getToolCalls("p8", turnId))[0].outcome).toEqual({ ok: true, value: "fast" });
    });

    it("a dispatch lost after the call was recorded is redone by the parent's next poll", async () => {
      let dropEnqueues = 1;
      const wrap = (s: Store): Store =>
        new Proxy(s, {
          get(t, p, r) {
            if (p === "enqueueTask") {
              return async (req: Parameters<Store["enqueueTask"]>[0]) => {
                if (req.options.delegation && dropEnqueues-- > 0) throw new Error("connection reset");
                return await t.enqueueTask(req);
              };
            }
            const v = Reflect.get(t, p, r);
            return typeof v === "function" ? v.bind(t) : v;
          },
        });
      const child = childOf("late", () => ({ toolCalls: [{ name: "submit_result", args: { result: "there" } }] }));
      const parent = parentOf("patient", [agentTool(child.agent)], [{ name: "late", args: { input: "x" } }]);
      const { gh, clock, store } = await setup([parent.agent], { wrap });
      await enqueue(store, clock, "p9", parent.agent, "go");
      await gh.drain();
      expect((await head(store, "p9")).state).toBe("waiting-tools");
      expect(child.model.requests).toHaveLength(0);
      clock.advance(POLL);
      await gh.drain();
      expect((await head(store, "p9")).state).toBe("done");
      expect(child.model.requests).toHaveLength(1);
    });

    it("the call's deadline holds: the watchdog times it out and the child is cancelled", async () => {
      const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({ q: z.string() }) });
      const child = childOf("stuck", () => ({ toolCalls: [{ name: "ask_human", args: { q: "?" } }] }), { tools: [ask] });
      const parent = parentOf("timer", [agentTool(child.agent, { timeoutMs: 60_000 })], [{ name: "stuck", args: { input: "x" } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      const { turnId } = await enqueue(store, clock, "p10", parent.agent, "go");
      await gh.drain();
      const [call] = await store.getToolCalls("p10", turnId);
      expect(call.deadline).toBe(clock.now() + 60_000);
      clock.advance(60_001);
      const t = await watchdogTick(store, clock);
      expect(t.timedOut).toBe(1);
      await gh.drain();
      expect((await store.getToolCalls("p10", turnId))[0].outcome).toMatchObject({ ok: false, error: { type: "timeout" } });
      expect((await head(store, "p10")).state).toBe("done");
      const childId = await childAgentId("p10", turnId, call.toolCallId, "stuck");
      expect((await head(store, childId)).state).toBe("failed");
      expect((await ctxOf(store, childId)).error!.message).toMatch(/timed out/);
    });

    it("the parent's delegated call takes no result over HTTP: 409 delegated_call, nothing changes; the child's result still lands", async () => {
      // The child waits on an external approval, so the parent waits on the child with its call pending.
      const approve = defineTool({ name: "approve", description: "Ask a human", parameters: z.object({ q: z.string() }) });
      const child = childOf("asker", (req) =>
        req.step === 1 ? { toolCalls: [{ name: "approve", args: { q: "ok?" } }] } : { toolCalls: [{ name: "submit_result", args: { result: "approved" } }] },
        { tools: [approve] });
      const parent = parentOf("boss", [agentTool(child.agent, { name: "ask" })], [{ name: "ask", args: { input: "go" } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      const { turnId } = await enqueue(store, clock, "p13", parent.agent, "go");
      await gh.drain();
      const [call] = await store.getToolCalls("p13", turnId);
      expect(call).toMatchObject({ status: "pending", delegated: true });
      const post = (agentId: string, body: unknown) => gh.fetch(new Request(`http://gh.test/v1/agents/${agentId}/tool-results`, {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
      }));
      const before = await store.getToolCalls("p13", turnId);
      const forged = await post("p13", { turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: "forged" } });
      expect(forged.status).toBe(409);
      expect(await forged.json()).toMatchObject({ code: "delegated_call" });
      expect(await store.getToolCalls("p13", turnId)).toEqual(before);
      // The child's own external call takes its result; the child finishes and answers the parent.
      const childId = await childAgentId("p13", turnId, call.toolCallId, "ask");
      const childHead = await store.getAgent(childId);
      const [childCall] = await store.getToolCalls(childId, childHead!.activeTurnId!);
      expect((await post(childId, { turnId: childHead!.activeTurnId, toolCallId: childCall.toolCallId, outcome: { ok: true, value: "yes" } })).status).toBe(200);
      await gh.drain();
      expect((await store.getToolCalls("p13", turnId))[0]).toMatchObject({ status: "resolved", source: "delegation", outcome: { ok: true, value: "approved" } });
    });

    it("custom parameters become the child's whole input, and the deliverable is kept on the tool", async () => {
      const child = childOf("summer", (req) => ({ toolCalls: [{ name: "submit_result", args: { result: JSON.parse(taskText(req)) } }] }));
      const deliverable = { type: "object" as const, required: ["a"] };
      const tool = agentTool(child.agent, { name: "add", parameters: z.object({ a: z.number(), b: z.number() }), deliverable });
      expect(tool.deliverable).toBe(deliverable);
      const parent = parentOf("calc", [tool], [{ name: "add", args: { a: 1, b: 2 } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      const { turnId } = await enqueue(store, clock, "p11", parent.agent, "go");
      await gh.drain();
      expect((await store.getToolCalls("p11", turnId))[0].outcome).toEqual({ ok: true, value: { a: 1, b: 2 } });
      expect((await store.getToolCalls("p11", turnId))[0].contractValidation).toMatchObject({ applied: true, passed: true });
    });

    it("a child's done output that breaks the call's deliverable reaches the parent as contract_violation", async () => {
      // The child finishes `done` with { total }, but the parent's call promised { sum }: the one contract check of
      // every boundary (contracts/check.ts) runs where the child's result is delivered, push or pull.
      const child = childOf("adder", () => ({ toolCalls: [{ name: "submit_result", args: { result: { total: 3 } } }] }));
      const tool = agentTool(child.agent, { name: "add", deliverable: { type: "object", required: ["sum"] } });
      const parent = parentOf("calc2", [tool], [{ name: "add", args: { input: "1+2" } }]);
      const { gh, clock, store } = await setup([parent.agent]);
      const { turnId } = await enqueue(store, clock, "p12", parent.agent, "go");
      await gh.drain();
      const [rec] = await store.getToolCalls("p12", turnId);
      expect(rec.outcome).toMatchObject({
        ok: false,
        error: { type: "contract_violation", retryable: false, metadata: { mismatch: "missing_required_key", expectedKeys: ["sum"], actualKeys: ["total"] } },
      });
      expect(rec.contractValidation).toMatchObject({ applied: true, passed: false, mismatch: "missing_required_key" });
      // The child itself ended done: the contract is the parent's boundary, not the child's verdict.
      expect((await head(store, await childAgentId("p12", turnId, rec.toolCallId, "add"))).state).toBe("done");
    });
  });
}
