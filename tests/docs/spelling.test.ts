/**
 * One spelling in the public API: `retryable`. `retriable` is accepted on
 * input (ToolError options, tool-result bodies) and in outcomes stored before
 * the spelling was fixed; code is only ever handed `retryable`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent } from "../../agents/define.ts";
import { normalizeOutcome, type Outcome } from "../../common/outcome.ts";
import { ToolError } from "../../errors/errors.ts";
import { createGatehouse, type Gatehouse } from "../../gatehouse.ts";
import { memoryStore } from "../../store/memory.ts";
import type { DeliverToolResultRequest, Store } from "../../store/port.ts";
import { defineTool } from "../../tools/define.ts";
import { manualClock } from "../helpers/clock.ts";
import { enqueue, recordingModel, toolMessages } from "../helpers/host.ts";

const open: Gatehouse[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

describe("retryable", () => {
  it("normalizeOutcome renames retriable, keeps retryable when both are given, and leaves the rest alone", () => {
    const legacy = { ok: false, error: { type: "t", message: "m", retriable: true } } as unknown as Outcome;
    expect(normalizeOutcome(legacy)).toEqual({ ok: false, error: { type: "t", message: "m", retryable: true } });
    const both = { ok: false, error: { type: "t", message: "m", retryable: false, retriable: true } } as unknown as Outcome;
    expect(normalizeOutcome(both)).toEqual({ ok: false, error: { type: "t", message: "m", retryable: false } });
    const current: Outcome = { ok: false, error: { type: "t", message: "m", retryable: true, metadata: { a: 1 } } };
    expect(normalizeOutcome(current)).toBe(current);
    const value: Outcome = { ok: true, value: { retriable: true } };
    expect(normalizeOutcome(value)).toBe(value);
    expect(normalizeOutcome(undefined)).toBeUndefined();
  });

  it("ToolError takes either spelling and exposes retryable", () => {
    expect(new ToolError({ type: "t", message: "m", retriable: true }).retryable).toBe(true);
    expect(new ToolError({ type: "t", message: "m", retryable: true }).retryable).toBe(true);
    expect(new ToolError({ type: "t", message: "m", retryable: false, retriable: true }).retryable).toBe(false);
    expect(new ToolError({ type: "t", message: "m" }).retryable).toBe(false);
  });

  it("a result stored with the older spelling reaches the model as retryable", async () => {
    const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({}) });
    const model = recordingModel((req) =>
      req.step === 1 ? { toolCalls: [{ id: "q1", name: "ask_human", args: {} }] } : { text: "done" }
    );
    const agent = defineAgent({ name: "speller", instructions: "", model, tools: [ask] });
    const clock = manualClock();
    const gh = createGatehouse({ agents: [agent], clock, leaseMs: 30_000, concurrency: 1 });
    open.push(gh);
    const { turnId } = await enqueue(gh.store, clock, "s1", agent, "go");
    await gh.drain();
    // Written as a store written before the spelling was fixed would hold it.
    const legacy = { ok: false, error: { type: "denied", message: "no", retriable: true } } as unknown as Outcome;
    const d = await gh.store.deliverToolResult({ agentId: "s1", turnId, toolCallId: "q1", outcome: legacy, afterExecution: "continue", source: "http", now: clock.now() });
    expect(d.status).toBe("accepted");
    await gh.drain();
    const [msg] = toolMessages(model.requests[1].messages, "q1");
    expect(JSON.parse(msg.content).error).toEqual({ type: "denied", message: "no", retryable: true });
    const [rec] = await gh.store.getToolCalls("s1", turnId);
    expect(rec.outcome).toEqual({ ok: false, error: { type: "denied", message: "no", retryable: true } });
  });

  it("the tool-results route accepts retriable and hands the store retryable", async () => {
    const delivered: DeliverToolResultRequest[] = [];
    const inner = memoryStore();
    const store: Store = {
      ...inner,
      deliverToolResult: (req) => {
        delivered.push(structuredClone(req));
        return inner.deliverToolResult(req);
      },
    };
    const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({}) });
    const model = recordingModel((req) =>
      req.step === 1 ? { toolCalls: [{ id: "q1", name: "ask_human", args: {} }] } : { text: "done" }
    );
    const agent = defineAgent({ name: "speller", instructions: "", model, tools: [ask] });
    const clock = manualClock();
    const gh = createGatehouse({ agents: [agent], clock, store, leaseMs: 30_000, concurrency: 1 });
    open.push(gh);
    const { turnId } = await enqueue(store, clock, "s2", agent, "go");
    await gh.drain();
    const res = await gh.fetch(
      new Request("http://gh.test/v1/agents/s2/tool-results", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ turnId, toolCallId: "q1", outcome: { ok: false, error: { type: "denied", message: "no", retriable: false } } }),
      }),
    );
    expect(res.status).toBe(200);
    expect(delivered.map((d) => d.outcome)).toEqual([{ ok: false, error: { type: "denied", message: "no", retryable: false } }]);
  });
});
