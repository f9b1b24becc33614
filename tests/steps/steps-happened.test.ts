/**
 * Steps decide and return what happened (actors/steps/happened.ts); the host
 * applies it (actors/host/apply.ts). These run the steps alone: a scripted
 * model, plain inputs, the turn's context from the pure machine driver, and
 * no store, actor or commit. What a step returns is the whole of what it did.
 */
import { createActor } from "xstate";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent, type AnyAgent } from "../../agents/define.ts";
import { handoff } from "../../agents/handoff.ts";
import { agentMachine } from "../../machines/agent.ts";
import type { AgentContext } from "../../machines/types.ts";
import { scriptedModel } from "../../models/scripted.ts";
import type { ModelResponse } from "../../models/types.ts";
import { defineTool } from "../../tools/define.ts";
import type { ClaimContext } from "../../actors/claim/context.ts";
import { UsedToolCallIds } from "../../actors/conversation/tool-call-ids.ts";
import { apply } from "../../actors/host/apply.ts";
import { spendLimitCrossed } from "../../actors/spend/guard.ts";
import type { Happening } from "../../actors/steps/happened.ts";
import { modelStep, type ModelStepInput } from "../../actors/steps/model-step.ts";
import { runInProcessTools, type ToolsInput } from "../../actors/steps/tool-runner.ts";
import { call, drive, ev } from "../helpers/machine.ts";

const NOW = 1_000;
const clock = { now: () => NOW };
const logger = { debug() {}, info() {}, warn() {}, error() {} };

const echo = defineTool({ name: "echo", description: "Echo", parameters: z.object({ x: z.string() }), execute: ({ x }) => `echo ${x}` });

function agentWith(responses: ModelResponse[]): AnyAgent {
  return defineAgent({ name: "unit", instructions: "Be brief.", model: scriptedModel(responses), tools: [echo] });
}

function modelInput(agent: AnyAgent, over: Partial<ModelStepInput> = {}): ModelStepInput {
  return {
    agent, binding: agent, agentId: "a1", abort: new AbortController(), history: [], usedIds: new UsedToolCallIds(),
    memory: { summary: null, firstIndex: 0 },
    delegation: { link: undefined, depth: 0, maxDepth: 3, pollMs: 30_000 }, spans: { turn: undefined, ids: {} },
    deps: { clock, externalToolTimeoutMs: 60_000, toolTimeoutMs: 10_000 },
    claim: { task: null },
    registry: { knownTools: async () => "" },
    ...over,
  };
}

const running = (): AgentContext => drive([ev.task("t1")]).context as AgentContext;
const kinds = (h: readonly Happening[]) => h.map((x) => (x.kind === "log" ? `log:${x.type}` : x.kind === "event" ? `event:${x.event.type}` : x.kind));

describe("the model step returns what happened, with no store", () => {
  it("a step whose model calls a tool: the call recorded before MODEL_STEP, its events in commit order", async () => {
    const agent = agentWith([{ text: "looking", toolCalls: [{ name: "echo", args: { x: "hi" } }], usage: { inputTokens: 7, outputTokens: 3 }, cost: 0.25 }]);
    const live: string[] = [];
    const out = await modelStep(modelInput(agent), running(), { push: (t) => void live.push(t), flush() {} });
    // started, planning, the streamed text as a chunk, the call recorded and logged, executing, the transition, completed.
    expect(kinds(out)).toEqual([
      "log:step", "log:step", "log:chunk", "record-call", "log:tool_call", "log:step", "event:MODEL_STEP", "log:step",
    ]);
    expect(live.join("")).toBe("looking");
    expect(out[2]).toMatchObject({ data: { step: 1, text: "looking" } });
    const recorded = out.find((h) => h.kind === "record-call");
    expect(recorded).toMatchObject({ kind: "record-call", delegated: false, call: { turnId: "t1", name: "echo", args: { x: "hi" }, external: false } });
    const step = out.find((h) => h.kind === "event");
    expect(step).toMatchObject({
      event: { type: "MODEL_STEP", at: NOW, text: "looking", usage: { inputTokens: 7, outputTokens: 3 }, cost: 0.25, toolCalls: [{ name: "echo", args: { x: "hi" } }] },
    });
    // The recorded call and the machine's call carry the same id.
    const id = (recorded as Extract<Happening, { kind: "record-call" }>).call.toolCallId;
    expect((step as Extract<Happening, { kind: "event" }>).event).toMatchObject({ toolCalls: [{ id }] });
  });

  it("a model that fails every attempt: MODEL_FAILED after one model_error per attempt", async () => {
    const agent = defineAgent({
      name: "unit", instructions: "x", tools: [echo], modelAttempts: 2,
      model: { name: "broken", generate: async () => { throw new Error("upstream 500"); } },
    });
    const out = await modelStep(modelInput(agent), running());
    expect(kinds(out)).toEqual(["log:step", "log:model_error", "log:model_error", "event:MODEL_FAILED"]);
    expect(out.at(-1)).toMatchObject({ event: { type: "MODEL_FAILED", message: "upstream 500" } });
  });

  it("an aborted attempt returns no machine event", async () => {
    const abort = new AbortController();
    abort.abort();
    const out = await modelStep(modelInput(agentWith([{ text: "never" }]), { abort }), running());
    expect(out.some((h) => h.kind === "event")).toBe(false);
  });
});

describe("the tool runner returns what happened, with no store", () => {
  it("runs the pending call and returns its result: logged, then resolved and applied while the turn waits on tools", async () => {
    const agent = agentWith([{ text: "x" }]);
    const waiting = drive([ev.task("t1"), ev.step([call("c1", "echo", { x: "yo" })])]).context as AgentContext;
    const input: ToolsInput = {
      agent, binding: agent, agentId: "a1", epoch: 1, abort: new AbortController(),
      delegation: { link: undefined, depth: 0, maxDepth: 3, pollMs: 30_000 }, spans: { turn: undefined, ids: {} }, approved: new Map(),
      deps: { clock, logger, agents: new Map([["unit", agent]]), toolTimeoutMs: 10_000 },
      claim: { task: null },
      lease: { lapsed: () => false, toolSignal: new AbortController().signal },
    };
    const ran = await runInProcessTools(input, waiting);
    expect(ran.ride).toBe(false);
    expect(kinds(ran.happened)).toEqual(["log:tool_result", "while", "tool-used"]);
    const group = ran.happened[1] as Extract<Happening, { kind: "while" }>;
    expect(group.state).toBe("waiting-tools");
    expect(kinds(group.then)).toEqual(["resolve-call", "event:TOOL_RESULT"]);
    expect(group.then[1]).toMatchObject({ event: { toolCallId: "c1", outcome: { ok: true, value: "echo yo" } } });
  });
});

describe("a handoff's answer is what happened, with no store", () => {
  it("the handoff call's result carries the switch and logs handoff before its transition, inside the waiting-tools group", async () => {
    const billing = defineAgent({ name: "billing", instructions: "Bill.", model: scriptedModel([{ text: "x" }]), tools: [echo] });
    const triage = defineAgent({ name: "triage", instructions: "Route.", model: scriptedModel([{ text: "x" }]), tools: [handoff(billing)] });
    const name = triage.offeredTools.find((t) => t.name !== "submit_result" && t.name.includes("billing"))!.name;
    const waiting = drive([ev.task("t1"), ev.step([call("h1", name, {})])]).context as AgentContext;
    const ran = await runInProcessTools({
      agent: triage, binding: triage, agentId: "a1", epoch: 1, abort: new AbortController(),
      delegation: { link: undefined, depth: 0, maxDepth: 3, pollMs: 30_000 }, spans: { turn: undefined, ids: {} }, approved: new Map(),
      deps: { clock, logger, agents: new Map([["triage", triage], ["billing", billing]]), toolTimeoutMs: 10_000 },
      claim: { task: null },
      lease: { lapsed: () => false, toolSignal: new AbortController().signal },
    }, waiting);
    // A handoff is committed at once: it never rides with the next step's commit.
    expect(ran.ride).toBe(false);
    const group = ran.happened.find((h) => h.kind === "while") as Extract<Happening, { kind: "while" }>;
    expect(kinds(group.then)).toEqual(["resolve-call", "log:handoff", "event:TOOL_RESULT"]);
    expect(group.then[1]).toMatchObject({ data: { toolCallId: "h1", from: "triage", to: "billing" } });
    expect(group.then[2]).toMatchObject({ event: { outcome: { ok: true, value: { handedOffTo: "billing" } }, handoff: { from: "triage", to: "billing" } } });
  });
});

describe("the spend guard returns what happened, with no store", () => {
  it("a turn over its token limit: budget_exhausted, the step's calls withdrawn, TURN_FAILED; none under it", async () => {
    const agent = agentWith([{ text: "x" }]);
    const context = drive([ev.task("t1"), ev.step([call("c1", "echo", { x: "a" })], null, { inputTokens: 90, outputTokens: 20 })]).context as AgentContext;
    const input = {
      spendLimit: { maxTokensPerTurn: 100 }, binding: agent, agentId: "a1", abort: new AbortController(),
      deps: { clock, logger }, commit: { endsTurn: () => false },
    };
    const crossed = await spendLimitCrossed(input, "waiting-tools", context, true);
    expect(kinds(crossed!)).toEqual(["log:budget_exhausted", "withdraw-calls", "event:TURN_FAILED"]);
    expect(crossed![2]).toMatchObject({ event: { turnId: "t1", reason: "budget_exhausted" } });
    expect(await spendLimitCrossed({ ...input, spendLimit: { maxTokensPerTurn: 1_000 } }, "waiting-tools", context, true)).toBeNull();
  });
});

describe("the host applies what happened, in order (actors/host/apply.ts)", () => {
  /** A claim context with a real actor and a sink that lists what it was asked to book: no store. */
  function hostOf(events: Parameters<typeof drive>[0]) {
    const agent = agentWith([{ text: "x" }]);
    const actor = createActor(agentMachine, { snapshot: drive(events) as never }).start();
    const booked: string[] = [];
    const note = (what: string) => () => void booked.push(what);
    const commit = {
      emit: (type: string) => void booked.push(`log:${type}`), append: note("log-all"), addMessage: note("message"),
      recordCall: note("record-call"), resolveCall: note("resolve-call"), ackMail: note("ack-mail"), setSummary: note("summary"),
      endTurn: note("end-turn"), endsTurn: () => false, withdrawTurnEnd: note("withdraw-turn-end"), abandon: note("abandon"),
      withdrawToolCalls: note("withdraw-calls"),
    };
    const used: string[] = [];
    const ctx = {
      deps: { agents: new Map([["unit", agent]]) }, claim: { task: null }, agentId: "a1", binding: agent, agent, actor,
      history: [], usedIds: new UsedToolCallIds(), memory: { summary: null, firstIndex: 0 }, transitionSeq: 0,
      delegation: { link: undefined, depth: 0, maxDepth: 3, pollMs: 30_000 }, commit,
      registry: { record: async (name: string) => void used.push(name), knownTools: async () => "" },
    } as unknown as ClaimContext;
    return { ctx, actor, booked, used };
  }

  it("a result after one that ended the turn is logged, never resolved or applied", async () => {
    const { ctx, actor, booked, used } = hostOf([ev.task("t1"), ev.step([call("c1", "echo"), call("c2", "echo")])]);
    const result = (id: string, afterExecution: "continue" | "terminate"): Happening[] => [
      { kind: "log", type: "tool_result", data: { toolCallId: id } },
      {
        kind: "while", state: "waiting-tools", then: [
          { kind: "resolve-call", result: { toolCallId: id, outcome: { ok: true, value: id }, afterExecution } },
          { kind: "event", event: { type: "TOOL_RESULT", at: NOW, toolCallId: id, outcome: { ok: true, value: id }, afterExecution } },
        ],
      },
    ];
    await apply(ctx, [...result("c1", "terminate"), ...result("c2", "continue"), { kind: "tool-used", name: "echo" }]);
    expect(actor.getSnapshot().value).toBe("done");
    expect(booked.filter((b) => b !== "message")).toEqual([
      "log:tool_result", "resolve-call", "log:transition", "end-turn", "log:task", "log:tool_result",
    ]);
    expect(used).toEqual(["echo"]);
  });

  it("an event the machine ignores books only event_ignored", async () => {
    const { ctx, booked } = hostOf([]);
    await apply(ctx, [{ kind: "event", event: { type: "FEEDBACK_APPENDED", at: NOW } }]);
    expect(booked).toEqual(["log:event_ignored"]);
  });
});
