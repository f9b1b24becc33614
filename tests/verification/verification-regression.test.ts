/**
 * What the gate must not change: agents without a verifier complete as
 * before (no gate events, no verdicts), and tool calls, external results
 * delivered over HTTP and watchdog timeouts behave the same for gated
 * agents. (A terminating tool result of a gated agent goes through the gate:
 * tests/verification/verification-bypass.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel, VerificationRejected } from "../../mod.ts";
import type { AnyTool, Gatehouse, Message, ModelResponse } from "../../mod.ts";
import { allEvents, contextOf, enqueue, get, manualClock, seqIds } from "../fixtures/gate-kit.ts";
import { memoryStateReader } from "../helpers/store-state.ts";

const Summary = z.object({ summary: z.string(), profile: z.string().default("fast") });
const gateEvents = async (gh: Gatehouse) =>
  (await allEvents(gh, "a1")).filter((e) => e.type.startsWith("verification_") || e.type === "verdict_recorded");

const add = defineTool({
  name: "add", description: "add", parameters: z.object({ a: z.number(), b: z.number() }), execute: ({ a, b }) => a + b,
});
const approval = defineTool({ name: "approval", description: "a human approves", parameters: z.object({ q: z.string() }) });
/** step 1: add + approval (external); step 2: the completion given. */
const toolsThen = (completion: ModelResponse) =>
  scriptedModel(({ step }) =>
    step === 1 ? { toolCalls: [{ name: "add", args: { a: 1, b: 2 } }, { name: "approval", args: { q: "ok?" } }] } : completion
  );

async function deliver(gh: Gatehouse, turnId: string, name: string, outcome: unknown) {
  const call = (await gh.store.getToolCalls("a1", turnId)).find((c) => c.name === name)!;
  const res = await gh.fetch(new Request("http://gatehouse/v1/agents/a1/tool-results", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ turnId, toolCallId: call.toolCallId, outcome }),
  }));
  expect(res.status).toBeLessThan(300);
}

describe("agents without a verifier", () => {
  it("an agent without output completes with submit_result: no gate events, no verdicts, no verification state", async () => {
    const agent = defineAgent({
      name: "plain", instructions: "", model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: 42 } }] }]),
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    await enqueue(gh, "a1", { agent: "plain", input: "go" });
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.output]).toEqual(["done", 42]);
    expect(context.verification).toMatchObject({ attemptsUsed: 0, lastOutcome: null, candidate: null });
    expect(await gateEvents(gh)).toEqual([]);
    expect(await gh.verdicts.list("a1")).toEqual([]);
    expect((await get(gh, "/v1/agents/a1")).json.verification).toBeUndefined();
    expect((await allEvents(gh, "a1")).filter((e) => e.type === "transition").map((e) => e.data.to)).toEqual(["running", "done"]);
  });

  it("an agent whose output has no verify completes with the parsed candidate: no gate events, no verdicts", async () => {
    const agent = defineAgent({
      name: "plain", instructions: "", output: { schema: Summary },
      model: scriptedModel([{ toolCalls: [{ name: "agent_output", args: { summary: "s" } }] }]),
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    await enqueue(gh, "a1", { agent: "plain", input: "go" });
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.output]).toEqual(["done", { summary: "s", profile: "fast" }]);
    expect(await gateEvents(gh)).toEqual([]);
    expect(await gh.verdicts.list("a1")).toEqual([]);
  });

  it("its schema still holds: an invalid candidate is refused with schema_invalid feedback, no verdict", async () => {
    const agent = defineAgent({
      name: "plain", instructions: "", output: { schema: Summary },
      model: scriptedModel([
        { toolCalls: [{ name: "agent_output", args: { summary: 1 } }] },
        { toolCalls: [{ name: "agent_output", args: { summary: "s" } }] },
      ]),
    });
    const gh = createGatehouse({ agents: [agent], ids: seqIds() });
    await enqueue(gh, "a1", { agent: "plain", input: "go" });
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.verification.attemptsUsed]).toEqual(["done", 2]);
    expect((await gateEvents(gh)).map((e) => e.type)).toEqual(["verification_started", "verification_rejected", "verification_attempt_counted"]);
    expect(await gh.verdicts.list("a1")).toEqual([]);
  });
});

describe("tools and waits of a gated agent", () => {
  const verifying = (model: ReturnType<typeof scriptedModel>, tools: AnyTool[] = [add, approval]) =>
    defineAgent({
      name: "fixer", instructions: "", tools, model,
      output: {
        schema: Summary,
        verify: (c) => {
          if (c.summary === "bad") throw new VerificationRejected({ message: "no" });
          return { final: c.summary };
        },
      },
    });

  it("waits for an external tool result over HTTP, then verifies the output", async () => {
    const seen: Message[][] = [];
    const model = scriptedModel(({ step, messages }) => {
      seen.push(messages);
      return step === 1
        ? { toolCalls: [{ name: "add", args: { a: 1, b: 2 } }, { name: "approval", args: { q: "ok?" } }] }
        : { toolCalls: [{ name: "agent_output", args: { summary: "approved" } }] };
    });
    const gh = createGatehouse({ agents: [verifying(model)], ids: seqIds() });
    const { json } = await enqueue(gh, "a1", { agent: "fixer", input: "go" });
    await gh.drain();
    const view = (await get(gh, "/v1/agents/a1")).json;
    expect(view.state).toBe("waiting-tools");
    expect(view.pendingToolCalls.map((c: { name: string; external: boolean }) => [c.name, c.external])).toEqual([["approval", true]]);
    expect(await gateEvents(gh)).toEqual([]);
    await deliver(gh, json.turnId, "approval", { ok: true, value: "yes" });
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.output]).toEqual(["done", { final: "approved" }]);
    const toolMessages = seen[1].filter((m) => m.role === "tool").map((m) => m.content);
    expect(toolMessages).toEqual(["3", "yes"]);
  });

  it("a watchdog timeout of the external tool is a result like before, and the turn still ends through the gate", async () => {
    const clock = manualClock();
    const gh = createGatehouse({
      agents: [verifying(toolsThen({ toolCalls: [{ name: "agent_output", args: { summary: "timed out, done anyway" } }] }))],
      ids: seqIds(), clock, externalToolTimeoutMs: 1_000,
    });
    await enqueue(gh, "a1", { agent: "fixer", input: "go" });
    await gh.drain();
    clock.advance(1_000);
    expect((await gh.tick()).timedOut).toBe(1);
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.output]).toEqual(["done", { final: "timed out, done anyway" }]);
    const messages = await gh.store.readMessages("a1");
    expect(messages.some((m) => m.role === "tool" && m.content.includes('"type":"timeout"'))).toBe(true);
  });

  it("a delivered external result of a finished turn is refused as before", async () => {
    const gh = createGatehouse({
      agents: [verifying(toolsThen({ toolCalls: [{ name: "agent_output", args: { summary: "x" } }] }))],
      ids: seqIds(),
    });
    const { json } = await enqueue(gh, "a1", { agent: "fixer", input: "go" });
    await gh.drain();
    await gh.fetch(new Request("http://gatehouse/v1/agents/a1/cancel", { method: "POST" }));
    await gh.drain();
    const call = (await gh.store.getToolCalls("a1", json.turnId)).find((c) => c.name === "approval")!;
    const before = await memoryStateReader(gh.store)("a1");
    const res = await gh.fetch(new Request("http://gatehouse/v1/agents/a1/tool-results", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ turnId: json.turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: "late" } }),
    }));
    expect(res.status).toBe(409);
    expect(await memoryStateReader(gh.store)("a1")).toEqual(before);
    expect((await contextOf(gh, "a1")).context.error?.reason).toBe("cancelled");
  });

  it("text without agent_output is not a completion for a gated agent: the model is reminded", async () => {
    const model = scriptedModel([{ text: "I think it is fixed" }, { toolCalls: [{ name: "agent_output", args: { summary: "fixed" } }] }]);
    const gh = createGatehouse({ agents: [verifying(model, [])], ids: seqIds() });
    await enqueue(gh, "a1", { agent: "fixer", input: "go" });
    await gh.drain();
    const { state, context } = await contextOf(gh, "a1");
    expect([state, context.output]).toEqual(["done", { final: "fixed" }]);
    const reminder = (await gh.store.readMessages("a1")).find((m) => m.role === "system");
    expect(reminder?.content).toMatch(/agent_output/);
  });
});
