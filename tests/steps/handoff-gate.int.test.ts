/**
 * A handoff does not open a way around the gate (docs/verification.md, "The
 * only ways a turn ends done"; docs/architecture.md, "Handoffs"): a turn
 * whose binding declares `output` ends `done` only through `agent_output`
 * (or a terminating result) judged by the binding's schema, verifier and
 * guardians, whatever definition the turn runs under when it ends. On the
 * memory store and Redis (a real redis-server), with a verifier that
 * rejects: text and `submit_result` under a target without `output` do not
 * end the turn; the target is offered `agent_output` with the binding's
 * schema; the binding's verifier judges every candidate, its verdicts are
 * recorded, a retryable rejection sends the turn to `revising` and its
 * feedback to the target's model, a final one fails the turn; and a parent
 * that delegates to such an agent (agentTool) never receives an output the
 * verifier did not pass.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { agentTool } from "../../agents/agent-tool.ts";
import { type AnyAgent, defineAgent } from "../../agents/define.ts";
import { handoff } from "../../agents/handoff.ts";
import { createGatehouse, type Gatehouse } from "../../gatehouse.ts";
import type { ModelRequest, ModelResponse } from "../../models/types.ts";
import { redisStore } from "../../redis.ts";
import { memoryStore } from "../../store/memory.ts";
import type { Store } from "../../store/port.ts";
import { defineTool } from "../../tools/define.ts";
import { VerificationRejected } from "../../verification/rejected.ts";
import { manualClock } from "../helpers/clock.ts";
import { ctxOf, enqueue, eventsOf, head, recordingModel, replayLog, transitionsOf } from "../helpers/host.ts";
import { initialTransition, transition } from "xstate";
import { agentMachine } from "../../machines/agent.ts";
import type { AgentEvent } from "../../machines/types.ts";
import { useRedisServer } from "../helpers/redis.ts";

const server = useRedisServer();

let n = 0;
const adapters: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `hg${++n}_${Math.random().toString(36).slice(2, 8)}` })],
];

const LEASE = 30_000;
const Answer = z.object({ answer: z.string() });
const names = (req: ModelRequest) => (req.tools ?? []).map((t) => t.function.name);
const said = (req: ModelRequest) => req.messages.map((m) => typeof m.content === "string" ? m.content : JSON.stringify(m.content)).join("\n");

/**
 * writer (declares `output`: schema and a counting verifier that passes only `{ answer: "final" }`) hands every
 * task to helper, which declares no `output` and answers with `helper(req, i)`.
 */
function team(
  helperRespond: (req: ModelRequest, i: number) => ModelResponse,
  opts: { retryable: boolean; writer?: (req: ModelRequest, i: number) => ModelResponse },
) {
  const judged: unknown[] = [];
  const helperModel = recordingModel(helperRespond);
  const lookup = defineTool({ name: "lookup", description: "Look up", parameters: z.object({}), execute: () => "found" });
  const helper = defineAgent({ name: "helper", instructions: "You are the helper.", model: helperModel, tools: [lookup] });
  const writerModel = recordingModel(opts.writer ?? (() => ({ toolCalls: [{ name: "transfer_to_helper", args: {} }] })));
  const writer = defineAgent({
    name: "writer",
    instructions: "You are the writer.",
    model: writerModel,
    tools: [handoff(helper)],
    output: {
      schema: Answer,
      verify: (c) => {
        judged.push(c);
        if (c.answer !== "final") {
          throw new VerificationRejected({ message: `"${c.answer}" is not final`, code: "not_final", retryable: opts.retryable });
        }
        return { answer: c.answer, checkedBy: "writer" };
      },
    },
    verifyAttempts: 3,
  });
  return { writer, helper, writerModel, helperModel, judged };
}

for (const [adapter, open] of adapters) {
  describe(`a handoff keeps the binding's gate on ${adapter}`, () => {
    let gh: Gatehouse | undefined;
    const start = (agents: AnyAgent[]) => {
      gh = createGatehouse({ agents, store: open(), clock: manualClock(), leaseMs: LEASE, concurrency: 2, delegation: { pollMs: 5_000 } });
      return gh;
    };
    const close = async () => {
      await gh?.close();
      gh = undefined;
    };

    it("text and submit_result under a target without output do not end the turn; the binding's verifier judges, rejects and passes", async () => {
      const t = team((_req, i) => [
        { text: "unchecked text" },
        { toolCalls: [{ name: "submit_result", args: { result: { answer: "sneaky" } } }] },
        { toolCalls: [{ name: "agent_output", args: { answer: "draft" } }] },
        { toolCalls: [{ name: "agent_output", args: { answer: "final" } }] },
      ][i] ?? { text: "too many steps" }, { retryable: true });
      const g = start([t.writer, t.helper]);
      try {
        const clock = manualClock();
        await enqueue(g.store, clock, "w1", t.writer, "write it");
        await g.drain();

        const h = await head(g.store, "w1");
        expect([h.state, (await ctxOf(g.store, "w1")).output]).toEqual(["done", { answer: "final", checkedBy: "writer" }]);
        // The binding's verifier saw every candidate and nothing else; its verdicts are recorded under its assignment.
        expect(t.judged).toEqual([{ answer: "draft" }, { answer: "final" }]);
        const verdicts = await g.verdicts.list("w1");
        expect(verdicts.map((v) => [v.guardianCode, v.status])).toEqual([
          ["output_verifier:writer", "NEEDS_CHANGES"], ["output_verifier:writer", "PASS"],
        ]);
        // The target's model was offered agent_output with the binding's schema, reminded after text,
        // told submit_result is not offered, and given the rejection's feedback.
        expect(t.helperModel.requests).toHaveLength(4);
        for (const req of t.helperModel.requests) {
          expect(req.messages[0]).toEqual({ role: "system", content: "You are the helper." });
          expect(names(req)).toEqual(["lookup", "agent_output"]);
          expect(req.tools!.at(-1)!.function.parameters).toMatchObject({ properties: { answer: { type: "string" } }, required: ["answer"] });
        }
        expect(said(t.helperModel.requests[1])).toContain("You must end this turn by calling one of: agent_output");
        expect(said(t.helperModel.requests[2])).toContain("tool_not_offered");
        expect(said(t.helperModel.requests[3])).toContain('<verification_rejected code="not_final" retryable="true">\n"draft" is not final');
        expect((await transitionsOf(g.store, "w1")).map((x) => `${x.from}->${x.to}`)).toEqual([
          "idle->running", "running->waiting-tools", "waiting-tools->running", "running->running", "running->waiting-tools",
          "waiting-tools->running", "running->verifying", "verifying->revising", "revising->running", "running->verifying",
          "verifying->done",
        ]);
        const view = await (await g.fetch(new Request("http://gh.test/v1/agents/w1"))).json() as Record<string, unknown>;
        expect(view).toMatchObject({ agent: "writer", definition: "helper", state: "done", verification: { maxAttempts: 3, attemptsUsed: 2 } });
        expect(await replayLog(g.store, "w1")).toEqual(h.snapshot);
      } finally {
        await close();
      }
    });

    it("a final rejection by the binding's verifier fails the turn, with its FAIL verdict", async () => {
      const t = team((_req, i) => i === 0 ? { text: "unchecked text" } : { toolCalls: [{ name: "agent_output", args: { answer: "draft" } }] }, {
        retryable: false,
      });
      const g = start([t.writer, t.helper]);
      try {
        await enqueue(g.store, manualClock(), "w2", t.writer, "write it");
        await g.drain();
        const c = await ctxOf(g.store, "w2");
        expect([(await head(g.store, "w2")).state, c.output, c.error?.reason]).toEqual(["failed", null, "verification_rejected"]);
        expect(t.judged).toEqual([{ answer: "draft" }]);
        expect((await g.verdicts.list("w2")).map((v) => [v.guardianCode, v.status])).toEqual([["output_verifier:writer", "FAIL"]]);
        expect(t.helperModel.requests).toHaveLength(2);
      } finally {
        await close();
      }
    });

    it("a parent that delegates to the agent (agentTool) never receives an output the binding's verifier did not pass", async () => {
      const t = team((_req, i) => i === 0 ? { text: "unchecked text" } : { toolCalls: [{ name: "agent_output", args: { answer: "draft" } }] }, {
        retryable: false,
      });
      const parentModel = recordingModel((req) =>
        req.step === 1
          ? { toolCalls: [{ name: "writer", args: { input: "write it" } }] }
          : { toolCalls: [{ name: "submit_result", args: { result: "seen" } }] }
      );
      const parent = defineAgent({ name: "lead", instructions: "Delegate.", model: parentModel, tools: [agentTool(t.writer)] });
      const g = start([parent, t.helper]);
      try {
        const { turnId } = await enqueue(g.store, manualClock(), "p1", parent, "go");
        await g.drain();
        const [call] = await g.store.getToolCalls("p1", turnId);
        expect(call.outcome).toMatchObject({ ok: false, error: { type: "delegation_failed", metadata: { reason: "verification_rejected" } } });
        expect(JSON.stringify(call.outcome)).not.toContain("unchecked text");
        const childId = ((await eventsOf(g.store, "p1", "delegation_started"))[0].data as { childAgentId: string }).childAgentId;
        expect((await head(g.store, childId)).state).toBe("failed");
        expect(t.judged).toEqual([{ answer: "draft" }]);
        expect((await g.verdicts.list(childId)).map((v) => v.status)).toEqual(["FAIL"]);
      } finally {
        await close();
      }
    });

    it("the binding's attempt count goes on across the handoff: it is one gate, not a fresh one per definition", async () => {
      // writer proposes "draft" itself (attempt 1 of 3, rejected), then hands off; helper's two drafts are attempts 2 and 3.
      const t = team(() => ({ toolCalls: [{ name: "agent_output", args: { answer: "draft" } }] }), {
        retryable: true,
        writer: (_req, i) => i === 0 ? { toolCalls: [{ name: "agent_output", args: { answer: "draft" } }] } : { toolCalls: [{ name: "transfer_to_helper", args: {} }] },
      });
      const g = start([t.writer, t.helper]);
      try {
        await enqueue(g.store, manualClock(), "w3", t.writer, "write it");
        await g.drain();
        const c = await ctxOf(g.store, "w3");
        expect([(await head(g.store, "w3")).state, c.error?.reason, c.verification.attemptsUsed]).toEqual(["failed", "verification_exhausted", 3]);
        expect([t.writerModel.requests.length, t.helperModel.requests.length, t.judged.length]).toEqual([2, 2, 3]);
        expect((await g.verdicts.list("w3")).map((v) => v.status)).toEqual(["NEEDS_CHANGES", "NEEDS_CHANGES", "FAIL"]);
        expect(await replayLog(g.store, "w3")).toEqual((await head(g.store, "w3")).snapshot);
      } finally {
        await close();
      }
    });

    it("a binding without output leaves the gate to a target that declares one (unchanged)", async () => {
      const judged: unknown[] = [];
      const checkerModel = recordingModel((_req, i) => ({ toolCalls: [{ name: "agent_output", args: { answer: i === 0 ? "draft" : "final" } }] }));
      const checker = defineAgent({
        name: "checker", instructions: "Check.", model: checkerModel,
        output: {
          schema: Answer,
          verify: (c) => {
            judged.push(c);
            if (c.answer === "draft") throw new VerificationRejected({ message: "not final", code: "draft", retryable: true });
            return { ...c, by: "checker" };
          },
        },
      });
      const router = defineAgent({
        name: "router", instructions: "Route.", tools: [handoff(checker)],
        model: recordingModel(() => ({ toolCalls: [{ name: "transfer_to_checker", args: {} }] })),
      });
      const g = start([router, checker]);
      try {
        await enqueue(g.store, manualClock(), "r1", router, "go");
        await g.drain();
        expect([(await head(g.store, "r1")).state, (await ctxOf(g.store, "r1")).output]).toEqual(["done", { answer: "final", by: "checker" }]);
        expect(judged).toEqual([{ answer: "draft" }, { answer: "final" }]);
        expect((await g.verdicts.list("r1")).map((v) => [v.guardianCode, v.status])).toEqual([
          ["output_verifier:checker", "NEEDS_CHANGES"], ["output_verifier:checker", "PASS"],
        ]);
      } finally {
        await close();
      }
    });
  });
}

describe("a switch that keeps the gate, on the statechart", () => {
  it("keeps the verification state and the turn's completion; a switch without keepsGate starts a fresh count", () => {
    const base = { maxSteps: 8, completion: "agent_output" as const, mustEndWith: ["agent_output"], verifyMaxAttempts: 3, maxVerifierErrors: 3 };
    const call = (id: string, name: string) => ({ id, name, args: {}, external: false, deadline: 10 });
    const run = (keepsGate: boolean) => {
      let [s] = initialTransition(agentMachine);
      const send = (ev: AgentEvent) => ([s] = transition(agentMachine, s, ev));
      send({ type: "TASK_STARTED", at: 1, turnId: "t1", input: "go", config: base });
      send({ type: "MODEL_STEP", at: 2, text: null, toolCalls: [call("c1", "agent_output")], usage: { inputTokens: 0, outputTokens: 0 }, cost: 0 });
      send({ type: "VERIFY_REJECTED", at: 3, hash: "h1", code: "no", message: "no", retryable: true });
      send({ type: "FEEDBACK_APPENDED", at: 4 });
      send({ type: "MODEL_STEP", at: 5, text: null, toolCalls: [call("c2", "transfer_to_b")], usage: { inputTokens: 0, outputTokens: 0 }, cost: 0 });
      const config = keepsGate ? { ...base, mustEndWith: [] } : { ...base, verifyMaxAttempts: 5 };
      send({
        type: "TOOL_RESULT", at: 6, toolCallId: "c2", outcome: { ok: true, value: null }, afterExecution: "continue",
        handoff: { from: "a", to: "b", config, ...(keepsGate ? { keepsGate: true as const } : {}) },
      });
      // Text under the target is reminded, never the end.
      send({ type: "MODEL_STEP", at: 7, text: "done?", toolCalls: [], usage: { inputTokens: 0, outputTokens: 0 }, cost: 0 });
      return s;
    };
    const kept = run(true);
    expect([kept.value, kept.context.definition, kept.context.config.completion]).toEqual(["running", "b", "agent_output"]);
    expect([kept.context.verification.attemptsUsed, kept.context.verification.maxAttempts, kept.context.verification.lastOutcome]).toEqual([1, 3, "rejected"]);
    const fresh = run(false);
    expect([fresh.context.verification.attemptsUsed, fresh.context.verification.maxAttempts]).toEqual([0, 5]);
  });
});
