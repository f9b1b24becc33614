/**
 * Spend limits as guards (common/spend-limit.ts, actors/spend/spend-limit.ts), through
 * createGatehouse() on the memory store: crossing a limit ends the turn
 * `failed` with `budget_exhausted` and a FAIL verdict of the built-in
 * `budget` guardian; task limits lower the agent's (raise them only with
 * `admin`, tests/routes/task-budget-raise.int.test.ts); a child's spend
 * counts toward its parent's; agents without limits behave as before.
 */
import { afterEach, describe, expect, it } from "vitest";
import { agentTool } from "../../agents/agent-tool.ts";
import { type AnyAgent, defineAgent } from "../../agents/define.ts";
import { checkSpendLimit, resolveSpendLimit, spendCrossed } from "../../common/spend-limit.ts";
import { DefinitionError } from "../../errors/errors.ts";
import { createGatehouse, type Gatehouse, type GatehouseOptions } from "../../gatehouse.ts";
import { scriptedModel } from "../../models/scripted.ts";
import type { ModelResponse } from "../../models/types.ts";
import { verdictIdOf } from "../../verification/recorder.ts";
import { manualClock } from "../helpers/clock.ts";
import { ctxOf, enqueue, eventsOf, head, replayLog } from "../helpers/host.ts";
import { z } from "zod";
import { defineTool } from "../../tools/define.ts";

const open: Gatehouse[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

function setup(agents: AnyAgent[], over: Partial<GatehouseOptions> = {}) {
  const clock = manualClock();
  const gh = createGatehouse({ agents, clock, leaseMs: 30_000, concurrency: 2, delegation: { pollMs: 5_000 }, ...over });
  open.push(gh);
  return { gh, clock, store: gh.store };
}

const echo = defineTool({ name: "echo", description: "Echo", parameters: z.object({ x: z.string() }), execute: ({ x }) => x });
/** Two tool steps of 60 tokens and cost 1 each, then a submit. */
const spender = (): ModelResponse[] => [
  { toolCalls: [{ name: "echo", args: { x: "a" } }], usage: { inputTokens: 50, outputTokens: 10 }, cost: 1 },
  { toolCalls: [{ name: "echo", args: { x: "b" } }], usage: { inputTokens: 50, outputTokens: 10 }, cost: 1 },
  { toolCalls: [{ name: "submit_result", args: { result: "ok" } }], usage: { inputTokens: 5, outputTokens: 5 }, cost: 0.1 },
];

describe("spend limits", () => {
  it("a turn that crosses maxTokensPerTurn fails with budget_exhausted and a FAIL verdict of the budget guardian", async () => {
    const agent = defineAgent({ name: "spender", instructions: "Spend.", model: scriptedModel(spender()), tools: [echo], spendLimit: { maxTokensPerTurn: 100 } });
    const { gh, clock, store } = setup([agent]);
    const { turnId } = await enqueue(store, clock, "s1", agent, "go");
    await gh.drain();
    const h = await head(store, "s1");
    expect(h.state).toBe("failed");
    const c = await ctxOf(store, "s1");
    expect(c.error).toEqual({ reason: "budget_exhausted", message: "The turn crossed its spend limit maxTokensPerTurn = 100 (used 120)" });
    expect(c.turnUsage).toMatchObject({ inputTokens: 100, outputTokens: 20, steps: 2 });
    // The second step's echo call was never recorded (so never run).
    expect((await store.getToolCalls("s1", turnId)).map((x) => x.status)).toEqual(["resolved"]);

    const [ev] = await eventsOf(store, "s1", "budget_exhausted");
    const verdictId = await verdictIdOf({ agentId: "s1", agentName: "spender", turnId, toolCallId: "budget", guardianCode: "budget" });
    expect(ev.data).toMatchObject({ limit: "maxTokensPerTurn", max: 100, used: 120, verdictId });
    const [v] = await gh.verdicts.list("s1");
    expect(v).toMatchObject({ verdictId, guardianCode: "budget", status: "FAIL", taskId: turnId, assignmentId: "assignment:spender:budget" });
    expect(v.evidence).toMatchObject({ limit: "maxTokensPerTurn", max: 100, used: 120 });
    const [task] = await eventsOf(store, "s1", "task");
    expect(task.data).toMatchObject({ status: "failed", error: { reason: "budget_exhausted" } });
    expect(await replayLog(store, "s1")).toEqual(h.snapshot);
  });

  it("a step that finishes the turn over the limit still fails it (one task event, failed)", async () => {
    const model = scriptedModel([{ text: "the answer", usage: { inputTokens: 500, outputTokens: 500 }, cost: 3 }]);
    const agent = defineAgent({ name: "talker", instructions: "Talk.", model, spendLimit: { maxCostPerTurn: 2 } });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "s2", agent, "go");
    await gh.drain();
    expect((await head(store, "s2")).state).toBe("failed");
    const tasks = await eventsOf(store, "s2", "task");
    expect(tasks).toHaveLength(1);
    expect(tasks[0].data).toMatchObject({ status: "failed", deliverable: null, error: { reason: "budget_exhausted" } });
    expect(await replayLog(store, "s2")).toEqual((await head(store, "s2")).snapshot);
  });

  it("a task's spendLimit overrides the agent's field by field through the enqueue route without auth (every request has admin)", async () => {
    const agent = defineAgent({ name: "spender", instructions: "Spend.", model: scriptedModel(spender()), tools: [echo], spendLimit: { maxTokensPerTurn: 100 } });
    const { gh, store } = setup([agent]);
    const post = (id: string, body: unknown) =>
      gh.fetch(new Request(`http://x/v1/agents/${id}/tasks`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
    expect((await post("s3", { agent: "spender", input: "go", spendLimit: { maxTokensPerTurn: 1000 } })).status).toBe(202);
    await gh.drain();
    expect((await head(store, "s3")).state).toBe("done");

    const bad = await post("s4", { agent: "spender", input: "go", spendLimit: { maxTokensPerTurn: -1 } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get("content-type")).toMatch(/application\/problem\+json/);
    expect(await store.getAgent("s4")).toBeNull();
    expect((await post("s4", { agent: "spender", input: "go", spendLimit: { maxTokens: 5 } })).status).toBe(400);
  });

  it("maxCostTotal spans turns: a spent agent's next turn fails before its first model call", async () => {
    let calls = 0;
    const model = scriptedModel(() => {
      calls++;
      return { text: "done", usage: { inputTokens: 1, outputTokens: 1 }, cost: 0.6 };
    });
    const agent = defineAgent({ name: "saver", instructions: "Save.", model, spendLimit: { maxCostTotal: 1 } });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "s5", agent, "one");
    await gh.drain();
    expect((await head(store, "s5")).state).toBe("done");
    await enqueue(store, clock, "s5", agent, "two");
    await gh.drain();
    expect((await head(store, "s5")).state).toBe("failed"); // 1.2 > 1 after the second step
    expect(calls).toBe(2);
    await enqueue(store, clock, "s5", agent, "three");
    await gh.drain();
    expect((await ctxOf(store, "s5")).error).toMatchObject({ reason: "budget_exhausted" });
    expect(calls).toBe(2);
    expect(await gh.verdicts.list("s5")).toHaveLength(2);
  });

  it("a child's spend counts toward its parent's budget", async () => {
    const child = defineAgent({
      name: "pricey", instructions: "Work.",
      model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: "r" } }], usage: { inputTokens: 400, outputTokens: 100 } }]),
    });
    const parentModel = scriptedModel([
      { toolCalls: [{ name: "pricey", args: { input: "x" } }], usage: { inputTokens: 10, outputTokens: 10 } },
      { toolCalls: [{ name: "submit_result", args: { result: "never" } }], usage: { inputTokens: 10, outputTokens: 10 } },
    ]);
    const parent = defineAgent({ name: "frugal", instructions: "Delegate.", model: parentModel, tools: [agentTool(child)], spendLimit: { maxTokensPerTurn: 300 } });
    const { gh, clock, store } = setup([parent]);
    await enqueue(store, clock, "s6", parent, "go");
    await gh.drain();
    const c = await ctxOf(store, "s6");
    expect((await head(store, "s6")).state).toBe("failed");
    expect(c.error!.reason).toBe("budget_exhausted");
    expect(c.turnUsage).toMatchObject({ inputTokens: 410, outputTokens: 110, steps: 1 });
    // Crossed by the child's result: the parent's own next step never ran.
    expect(await eventsOf(store, "s6", "delegation_started")).toHaveLength(1);
    expect(await replayLog(store, "s6")).toEqual((await head(store, "s6")).snapshot);
  });

  it("a step that crosses the limit while asking for a delegation neither records nor dispatches it", async () => {
    const child = defineAgent({ name: "never", instructions: "Work.", model: scriptedModel([{ text: "should not run" }]) });
    const model = scriptedModel([{ toolCalls: [{ name: "never", args: { input: "x" } }], usage: { inputTokens: 1_000, outputTokens: 0 } }]);
    const parent = defineAgent({ name: "eager", instructions: "Delegate.", model, tools: [agentTool(child)], spendLimit: { maxTokensPerTurn: 10 } });
    const { gh, clock, store } = setup([parent]);
    const { turnId } = await enqueue(store, clock, "s8", parent, "go");
    await gh.drain();
    expect((await ctxOf(store, "s8")).error!.reason).toBe("budget_exhausted");
    expect(await store.getToolCalls("s8", turnId)).toEqual([]);
    expect(await eventsOf(store, "s8", "delegation_started")).toEqual([]);
    expect((await gh.store.listAgents({ limit: 10 })).map((a) => a.agentId)).toEqual(["s8"]);
  });

  it("without limits nothing is checked: no event, no verdict", async () => {
    const agent = defineAgent({ name: "free", instructions: "Spend.", model: scriptedModel(spender()), tools: [echo] });
    const { gh, clock, store } = setup([agent]);
    await enqueue(store, clock, "s7", agent, "go");
    await gh.drain();
    expect((await head(store, "s7")).state).toBe("done");
    expect(await eventsOf(store, "s7", "budget_exhausted")).toEqual([]);
    expect(await gh.verdicts.list("s7")).toEqual([]);
  });

  it("definitions refuse a bad budget and the code of the built-in guardian", () => {
    const model = scriptedModel([{ text: "x" }]);
    for (const budget of [{ maxTokensPerTurn: 1.5 }, { maxCostTotal: -1 }, { maxCost: 1 }, "lots"]) {
      expect(() => defineAgent({ name: "b", instructions: "", model, spendLimit: budget as never })).toThrow(DefinitionError);
    }
    expect(checkSpendLimit({ maxCostPerTurn: 0 })).toBeNull();
    expect(resolveSpendLimit({ maxTokensPerTurn: 10, maxCostTotal: 5 }, { maxTokensPerTurn: 20 })).toEqual({ maxTokensPerTurn: 10, maxCostTotal: 5 });
    expect(resolveSpendLimit({ maxTokensPerTurn: 10, maxCostTotal: 5 }, { maxTokensPerTurn: 20 }, true)).toEqual({ maxTokensPerTurn: 20, maxCostTotal: 5 });
    expect(resolveSpendLimit(undefined, { maxTokensPerTurn: "x" })).toBeNull();
    expect(spendCrossed({ maxCostPerTurn: 1 }, { turnTokens: 0, turnCost: 1, totalCost: 1 })).toBeNull();
    expect(spendCrossed({ maxCostPerTurn: 1 }, { turnTokens: 0, turnCost: 1.01, totalCost: 1 })).toMatchObject({ limit: "maxCostPerTurn" });
  });
});
