/**
 * Property: completion is earned. For random agent definitions (with or
 * without `output`, `verify` and a guardian; verifiers that pass, transform,
 * reject by rule or always, or crash; `mustEndWith` and `allowedTools`
 * variants) and random model behaviour (any mix of `agent_output`,
 * `submit_result`, offered, hidden and unknown tools, terminating tools,
 * text, and external results delivered over HTTP with `continue` or
 * `terminate`), run through the real host (createGatehouse on the memory
 * store):
 *
 * 1. an agent that declares `output` enters `done` only from `verifying`;
 * 2. a gated agent (verify or guardians) ends a turn `done` only with a PASS
 *    verdict of its output verifier for that turn whose result is the
 *    output, and a PASS of every guardian for the same candidate;
 * 3. an agent with `output` never stores an output its schema refuses;
 * 4. an agent without `output` never enters `verifying`;
 * 5. a call of a name the turn did not offer never runs: its tool message is
 *    `tool_not_offered` (or `not_executed` when the step finished the turn).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineGuardian, defineTool, terminate, VerificationRejected } from "../../mod.ts";
import type { AnyAgent, Gatehouse, Message, ModelResponse } from "../../mod.ts";
import { agentToolSpecs } from "../../actors/steps/tool-specs.ts";
import type { AgentContext } from "../../machines/types.ts";
import { recordingModel } from "../helpers/host.ts";
import { manualClock, type ManualClock, seqIds } from "../fixtures/gate-kit.ts";
import { jsonRequest } from "../helpers/http.ts";

const Amount = z.object({ amount: z.number().int().max(100) });

const AMOUNTS = [-5, 7, 8, 42, 42, 64, 100, 101, 1_000_000, "x"] as const;
const amountArb = fc.constantFrom(...AMOUNTS);
/** Arguments a model might write: the schema's shape, something else, or submit_result's shape. */
const argsArb = fc.oneof(
  amountArb.map((amount) => ({ amount })),
  amountArb.map((amount) => ({ result: { amount } })),
  fc.constant({}),
);
const NAMES = ["agent_output", "agent_output", "agent_output", "submit_result", "submit_result", "lookup", "stop", "ask", "finish", "hidden", "nonexistent"] as const;
const callArb = fc.record({ name: fc.constantFrom(...NAMES), args: argsArb });
const responseArb: fc.Arbitrary<ModelResponse> = fc.oneof(
  { weight: 1, arbitrary: fc.option(fc.string({ maxLength: 5 }), { nil: undefined }).map((text) => ({ text: text ?? "" })) },
  { weight: 4, arbitrary: fc.array(callArb, { minLength: 1, maxLength: 3 }).map((toolCalls) => ({ toolCalls })) },
);

type VerifyKind = "none" | "pass" | "transform" | "even" | "reject" | "reject_final" | "crash";
type GuardianKind = "none" | "small" | "fail";

const configArb = fc.record({
  output: fc.constantFrom(true, true, false),
  verify: fc.constantFrom<VerifyKind>("none", "pass", "pass", "transform", "transform", "even", "even", "reject", "reject_final", "crash"),
  guardian: fc.constantFrom<GuardianKind>("none", "none", "small", "fail"),
  mustEndWith: fc.constantFrom<"default" | "empty" | "finish" | "completion">("default", "empty", "finish", "completion"),
  allowed: fc.constantFrom<"all" | "no_hidden" | "lookup_only">("all", "no_hidden", "no_hidden", "lookup_only"),
  maxSteps: fc.integer({ min: 1, max: 5 }),
  verifyMaxAttempts: fc.integer({ min: 1, max: 3 }),
});
type Config = typeof configArb extends fc.Arbitrary<infer T> ? T : never;

const deliveryArb = fc.record({
  value: amountArb,
  ok: fc.boolean(),
  terminate: fc.boolean(),
});

const scenarioArb = fc.record({
  config: configArb,
  responses: fc.array(responseArb, { minLength: 1, maxLength: 6 }),
  /** Half the models propose a valid candidate after their random steps, so gated turns do reach `done`. */
  goodEnding: fc.boolean(),
  deliveries: fc.array(deliveryArb, { minLength: 1, maxLength: 6 }),
  turns: fc.integer({ min: 1, max: 2 }),
});
type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

function verifierOf(kind: VerifyKind) {
  switch (kind) {
    case "none":
      return undefined;
    case "pass":
      return () => undefined;
    case "transform":
      // A value that fits the schema, derived from the candidate.
      return (c: { amount: number }) => ({ amount: Math.min(c.amount, 10) });
    case "even":
      return (c: { amount: number }) => {
        if (c.amount % 2 !== 0) throw new VerificationRejected({ message: "odd amounts are refused", code: "odd" });
      };
    case "reject":
      return () => {
        throw new VerificationRejected({ message: "never good enough", code: "never" });
      };
    case "reject_final":
      return () => {
        throw new VerificationRejected({ message: "refused for good", code: "final", retryable: false });
      };
    case "crash":
      return () => {
        throw new Error("verifier crashed");
      };
  }
}

function agentFor(c: Config, responses: ModelResponse[]) {
  const lookup = defineTool({ name: "lookup", description: "l", parameters: z.object({ amount: z.unknown().optional() }), execute: () => ({ found: 1 }) });
  const stop = defineTool({
    name: "stop", description: "ends the turn", parameters: z.object({ amount: z.unknown().optional() }),
    execute: (a) => terminate({ amount: a.amount ?? 1_000_000 }),
  });
  const finish = defineTool({ name: "finish", description: "f", parameters: z.object({}).passthrough(), execute: () => "noted" });
  const ask = defineTool({ name: "ask", description: "external", parameters: z.object({ amount: z.unknown().optional() }) });
  const hidden = defineTool({ name: "hidden", description: "never offered", parameters: z.object({}).passthrough(), execute: () => "ran" });
  const tools = [lookup, stop, finish, ask, hidden];
  const allowedTools = c.allowed === "all"
    ? undefined
    : c.allowed === "no_hidden"
    ? ["lookup", "stop", "finish", "ask"]
    : ["lookup"];
  const completion = c.output ? "agent_output" : "submit_result";
  const mustEndWith = c.mustEndWith === "default"
    ? undefined
    : c.mustEndWith === "empty"
    ? []
    : c.mustEndWith === "finish"
    ? ["finish"]
    : [completion];
  const verify = verifierOf(c.verify);
  const guardians = !c.output || c.guardian === "none" ? [] : [
    defineGuardian({
      code: c.guardian === "small" ? "small_amounts" : "always_fail",
      review: (cand: { amount: number }) =>
        c.guardian === "fail"
          ? { status: "FAIL" as const, message: "no" }
          : cand.amount < 50
          ? { status: "PASS" as const }
          : { status: "NEEDS_CHANGES" as const, message: "too large" },
    }),
  ];
  const model = recordingModel((_req, i) => responses[i % responses.length]);
  const agent = defineAgent({
    name: "payout",
    instructions: "Pay out.",
    model,
    tools,
    ...(allowedTools ? { allowedTools } : {}),
    ...(mustEndWith ? { mustEndWith } : {}),
    stepLimit: c.maxSteps,
    ...(c.output
      ? { output: { schema: Amount, ...(verify ? { verify } : {}), verifyAttempts: c.verifyMaxAttempts }, guardians }
      : {}),
  });
  return { agent, model, gated: c.output && (verify !== undefined || guardians.length > 0), guardians };
}

async function post(gh: Gatehouse, path: string, body: unknown) {
  return gh.fetch(jsonRequest("POST", path, body, {}, "http://gatehouse"));
}

/** Runs one turn to its end: drains, answers external calls from `deliveries` over HTTP, waits out verifier backoffs. */
async function runTurn(gh: Gatehouse, clock: ManualClock, s: Scenario, next: { delivery: number }): Promise<string> {
  const res = await post(gh, "/v1/agents/p1/tasks", { agent: "payout", input: "pay" });
  expect(res.status).toBe(202);
  const { turnId } = await res.json();
  for (let round = 0; round < 60; round++) {
    await gh.drain();
    const head = (await gh.store.getAgent("p1"))!;
    if (head.activeTurnId !== turnId && (head.state === "done" || head.state === "failed")) return turnId;
    const ctx = (head.snapshot as { context: AgentContext }).context;
    if (head.state === "waiting-tools") {
      for (const [toolCallId, p] of Object.entries(ctx.pending)) {
        if (!p.external) continue;
        const d = s.deliveries[next.delivery++ % s.deliveries.length];
        const outcome = d.ok ? { ok: true, value: { amount: d.value } } : { ok: false, error: { type: "denied", message: "no" } };
        const r = await post(gh, "/v1/agents/p1/tool-results", { turnId, toolCallId, outcome, afterExecution: d.terminate ? "terminate" : "continue" });
        expect(r.status).toBe(200);
      }
    } else {
      clock.advance(60_000); // a verifier backoff
    }
  }
  throw new Error(`turn ${turnId} did not end`);
}

const offeredNames = (agent: AnyAgent) => agentToolSpecs(agent).map((t) => t.function.name);

async function check(s: Scenario): Promise<{ done: number; gatedDone: number }> {
  const clock = manualClock();
  const responses = s.goodEnding ? [...s.responses, { toolCalls: [{ name: "agent_output", args: { amount: 8 } }] }] : s.responses;
  const { agent, model, gated, guardians } = agentFor(s.config, responses);
  const gh = createGatehouse({ agents: [agent], clock, ids: seqIds(), verifierBackoffMs: 10 });
  const offered = new Set(offeredNames(agent));
  const next = { delivery: 0 };
  let done = 0;
  let gatedDone = 0;
  try {
    for (let t = 0; t < s.turns; t++) {
      const turnId = await runTurn(gh, clock, s, next);
      const head = (await gh.store.getAgent("p1"))!;
      const ctx = (head.snapshot as { context: AgentContext }).context;
      const transitions = (await gh.store.readEvents("p1", 0, 100_000))
        .filter((e) => e.type === "transition" && e.turnId === turnId)
        .map((e) => e.data as { from: string; to: string });

      if (agent.output) {
        // 1. done only from verifying.
        for (const tr of transitions) if (tr.to === "done") expect(tr.from).toBe("verifying");
        // 3. never an output the schema refuses.
        if (head.state === "done") expect(Amount.safeParse(ctx.output).success, JSON.stringify(ctx.output)).toBe(true);
      } else {
        // 4. an agent without output never enters the gate.
        expect(transitions.some((tr) => tr.to === "verifying")).toBe(false);
        expect(ctx.verification.lastOutcome).toBeNull();
      }
      if (gated && head.state === "done") {
        // 2. a PASS verdict for the turn, whose result is the output, and a PASS of every guardian for that candidate.
        const verdicts = await gh.verdicts.list("p1", { turnId, status: "PASS" });
        const own = verdicts.filter((v) => v.guardianCode === "output_verifier:payout");
        expect(own.length).toBeGreaterThan(0);
        const last = own[own.length - 1];
        expect(last.evidence.result).toEqual(ctx.output);
        for (const g of guardians) {
          expect(verdicts.some((v) => v.guardianCode === g.code && v.metadata.toolCallId === last.metadata.toolCallId)).toBe(true);
        }
        gatedDone++;
      }
      if (head.state === "done") done++;
    }
    // 5. calls outside the offered specs never run.
    const messages: Message[] = await gh.store.readMessages("p1");
    const names = new Map<string, string>();
    for (const m of messages) for (const c of m.toolCalls ?? []) names.set(c.id, c.name);
    for (const m of messages) {
      if (m.role !== "tool" || !m.toolCallId) continue;
      const name = names.get(m.toolCallId)!;
      if (offered.has(name)) continue;
      expect(["tool_not_offered", "not_executed", "cancelled"]).toContain(JSON.parse(m.content).error?.type);
    }
    // The model was only ever offered the agent's specs.
    for (const r of model.requests) expect(r.tools.map((t) => t.function.name)).toEqual(offeredNames(agent));
  } finally {
    await gh.close();
  }
  return { done, gatedDone };
}

describe("completion is earned (property)", () => {
  it("for random agents and random model behaviour, done only through the gate, with a PASS verdict and a valid output", async () => {
    let done = 0;
    let gatedDone = 0;
    await fc.assert(
      fc.asyncProperty(scenarioArb, async (s) => {
        const r = await check(s);
        done += r.done;
        gatedDone += r.gatedDone;
      }),
      { numRuns: 120, seed: 20261128 },
    );
    // The generator must reach the interesting ends, or the property proves little.
    expect(done).toBeGreaterThan(10);
    expect(gatedDone).toBeGreaterThan(3);
  }, 120_000);
});
