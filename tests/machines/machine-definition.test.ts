/**
 * `GET /v1/machine` serves a machine XState runs (machines/definition.ts):
 * the body, as it comes over HTTP, goes into `createMachine` and an actor
 * starts without any error, now or later; with the agent machine's own
 * implementations provided, the loaded machine goes through the same states
 * with the same contexts as `agentMachine` for random event sequences, and
 * ignores the same events. Machines JSON cannot carry are refused.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { assign, createActor, createMachine, initialTransition, setup, transition } from "xstate";
import { agentMachine, DEFAULT_TURN_CONFIG } from "../../machines/agent.ts";
import { machineConfig } from "../../machines/definition.ts";
import type { AgentEvent, ModelToolCall, TurnConfig } from "../../machines/types.ts";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";
import { MachineView } from "../../routes/schemas.ts";

async function served(): Promise<Record<string, unknown>> {
  const gh = createGatehouse({ agents: [defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "ok" }]) })] });
  const res = await gh.fetch(new Request("http://gh.test/v1/machine"));
  expect(res.status).toBe(200);
  return await res.json();
}

/** Loads the served JSON as a machine; typed loosely, as a client without gatehouse's types would. */
// deno-lint-ignore no-explicit-any
const load = (json: Record<string, unknown>) => createMachine(json as any);

/** Errors thrown outside any call (XState reports an unobserved actor error by throwing from a timer). */
function collectUncaught(): { errors: unknown[]; stop: () => void } {
  const errors: unknown[] = [];
  const g = globalThis as unknown as {
    addEventListener?: (t: string, f: (e: { error: unknown; preventDefault(): void }) => void) => void;
    removeEventListener?: (t: string, f: (e: { error: unknown; preventDefault(): void }) => void) => void;
    process?: { on(t: string, f: (e: unknown) => void): void; off(t: string, f: (e: unknown) => void): void };
  };
  if (typeof g.addEventListener === "function") {
    const onError = (e: { error: unknown; preventDefault(): void }) => {
      errors.push(e.error);
      e.preventDefault();
    };
    g.addEventListener("error", onError);
    return { errors, stop: () => g.removeEventListener!("error", onError) };
  }
  const onError = (e: unknown) => errors.push(e);
  g.process!.on("uncaughtException", onError);
  return { errors, stop: () => g.process!.off("uncaughtException", onError) };
}

const tick = (ms = 30) => new Promise((r) => setTimeout(r, ms));

describe("GET /v1/machine is a machine XState runs", () => {
  it("the body is an XState config: string initial, states by key, transitions with named guards and actions", async () => {
    const json = await served();
    MachineView.parse(json);
    expect(json.initial).toBe("idle");
    const states = json.states as Record<string, { on: Record<string, unknown[]> }>;
    expect(states.running.on.MODEL_FAILED).toEqual([{ target: "failed", actions: ["failModel"] }]);
    expect(states.verifying.on.VERIFY_ERROR.at(-1)).toEqual({ target: "verifying", actions: ["noteVerifierError"], reenter: true });
    expect(json.context).toEqual(initialTransition(agentMachine)[0].context);
  });

  it("createMachine(body) starts an actor and takes unguarded events: TASK_STARTED, CANCEL, MODEL_FAILED", async () => {
    const actor = createActor(load(await served())).start();
    expect(actor.getSnapshot().value).toBe("idle");
    const drive = (type: string, expected: string) => {
      actor.send({ type });
      expect(actor.getSnapshot().value, type).toBe(expected);
      expect(actor.getSnapshot().status).toBe("active");
    };
    drive("TASK_STARTED", "running");
    drive("CANCEL", "failed");
    drive("TASK_STARTED", "running");
    drive("MODEL_FAILED", "failed");
    drive("CANCEL", "failed"); // ignored: failed ends the turn
    drive("TASK_STARTED", "running");
    actor.stop();
  }, 15_000);

  it("starting an actor from the body throws nothing asynchronously; the machine's toJSON() form does fail", async () => {
    const json = await served();
    const uncaught = collectUncaught();
    try {
      const actor = createActor(load(json)).start();
      actor.send({ type: "TASK_STARTED" });
      actor.send({ type: "CANCEL" });
      await tick();
      expect(uncaught.errors).toEqual([]);
      expect(actor.getSnapshot().status).toBe("active");
      expect(actor.getSnapshot().value).toBe("failed");
      actor.stop();
    } finally {
      uncaught.stop();
    }
    // The control: XState's internal node view (what the route served before) cannot start.
    const errors: unknown[] = [];
    const broken = createActor(load(JSON.parse(JSON.stringify(agentMachine.toJSON()))));
    broken.subscribe({ error: (e) => errors.push(e) });
    broken.start();
    expect(broken.getSnapshot().status).toBe("error");
    expect(String(errors[0])).toMatch(/Initial state node .* not found/);
  }, 15_000);
});

// ------------------------------------------------------------ equivalence --

const jsonArb = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<unknown>;
const KINDS: AgentEvent["type"][] = [
  "TASK_STARTED",
  "MODEL_STEP",
  "MODEL_FAILED",
  "STEP_BUDGET_EXHAUSTED",
  "TOOL_RESULT",
  "VERIFY_PASSED",
  "VERIFY_REJECTED",
  "VERIFY_ERROR",
  "FEEDBACK_APPENDED",
  "CANCEL",
  "TURN_FAILED",
];
/** The kinds each state takes, to steer sequences deep; other kinds are sent too (and must be ignored alike). */
const TAKES: Record<string, AgentEvent["type"][]> = {
  running: ["MODEL_STEP", "MODEL_STEP", "MODEL_STEP", "STEP_BUDGET_EXHAUSTED"],
  "waiting-tools": ["TOOL_RESULT", "TOOL_RESULT", "TOOL_RESULT"],
  verifying: ["VERIFY_PASSED", "VERIFY_REJECTED", "VERIFY_REJECTED", "VERIFY_ERROR"],
  revising: ["FEEDBACK_APPENDED"],
};

const stepArb = fc.record({
  any: fc.boolean(),
  pick: fc.nat(),
  at: fc.nat({ max: 1e9 }),
  config: fc.record({
    maxSteps: fc.integer({ min: 1, max: 4 }),
    completion: fc.constantFrom("submit_result" as const, "agent_output" as const),
    mustEndWith: fc.constantFrom<string[]>([], ["finish"]),
    verifyMaxAttempts: fc.integer({ min: 1, max: 3 }),
    maxVerifierErrors: fc.integer({ min: 1, max: 3 }),
  }),
  calls: fc.array(
    fc.record({ name: fc.constantFrom("lookup", "ask", "finish", "agent_output", "submit_result"), args: jsonArb }),
    { maxLength: 3 },
  ),
  text: fc.option(fc.string({ maxLength: 5 })),
  callPick: fc.nat(),
  ok: fc.boolean(),
  terminate: fc.boolean(),
  hash: fc.constantFrom("h1", "h2"),
  retryable: fc.boolean(),
  value: jsonArb,
});
type Step = typeof stepArb extends fc.Arbitrary<infer T> ? T : never;

function eventFor(value: string, context: { turns: number; turnId: string | null; step: number; pending: object }, s: Step): AgentEvent {
  const takes: AgentEvent["type"][] = s.any ? KINDS : [...(TAKES[value] ?? ["TASK_STARTED"]), "CANCEL"];
  const type = takes[s.pick % takes.length];
  const at = s.at;
  switch (type) {
    case "TASK_STARTED": {
      // Spread over the defaults, so fields TurnConfig gains later keep their default values.
      const config: TurnConfig = { ...DEFAULT_TURN_CONFIG, ...s.config };
      return { type, at, turnId: `t${context.turns + 1}`, input: s.value, config };
    }
    case "MODEL_STEP": {
      const toolCalls: ModelToolCall[] = s.calls.map((c, i) => ({
        id: `call_${context.turnId}_${context.step + 1}_${i}`,
        name: c.name,
        args: c.args,
        external: c.name === "ask",
        deadline: at + 1000,
      }));
      return { type, at, text: s.text, toolCalls, usage: { inputTokens: 3, outputTokens: 2 }, cost: 0.1 };
    }
    case "MODEL_FAILED":
      return { type, at, message: "boom" };
    case "STEP_BUDGET_EXHAUSTED":
      return { type, at };
    case "TOOL_RESULT": {
      const ids = [...Object.keys(context.pending).sort(), "call_unknown"];
      return {
        type,
        at,
        toolCallId: ids[s.callPick % ids.length],
        outcome: s.ok ? { ok: true, value: s.value } : { ok: false, error: { type: "boom", message: "x", retryable: false } },
        afterExecution: s.terminate ? "terminate" : "continue",
      };
    }
    case "VERIFY_PASSED":
      return { type, at, hash: s.hash, result: s.value };
    case "VERIFY_REJECTED":
      return { type, at, hash: s.hash, code: "tests_failed", message: "no", retryable: s.retryable };
    case "VERIFY_ERROR":
      return { type, at, message: "verifier down", retryAt: at + 1000 };
    case "FEEDBACK_APPENDED":
      return { type, at };
    case "CANCEL":
      return { type, at, reason: "stop" };
    case "TURN_FAILED":
      return { type, at, turnId: s.retryable ? `t${context.turns + 1}` : context.turnId ?? "t0", reason: "claim_error", message: "x" };
  }
}

describe("the served machine, given the agent machine's implementations, is the agent machine", () => {
  it("random event sequences give identical state values and contexts on both", async () => {
    const json = await served();
    const loaded = load(json).provide(agentMachine.implementations as never);
    const visited = new Set<string>();
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 30 }), (steps) => {
        let a = initialTransition(agentMachine)[0];
        let b = initialTransition(loaded)[0];
        expect(b.value).toEqual(a.value);
        expect(b.context).toEqual(a.context);
        for (const step of steps) {
          const event = eventFor(a.value as string, a.context, step);
          const [a2] = transition(agentMachine, a, event);
          const [b2] = transition(loaded, b, JSON.parse(JSON.stringify(event)));
          // Taken or ignored alike (an ignored event returns the same snapshot).
          expect(b2 === b, `${a.value} ignores ${event.type}`).toBe(a2 === a);
          a = a2;
          b = b2;
          expect(b.value, event.type).toEqual(a.value);
          expect(b.context, event.type).toEqual(a.context);
          visited.add(a.value as string);
        }
      }),
      // A fixed seed: the coverage check below must not depend on the luck of one run (an unseeded run once
      // missed a state under Deno). Change the seed to explore other sequences; the check keeps any seed honest.
      { numRuns: 300, seed: 20261126 },
    );
    // The sequences must reach every state, or the property proves little.
    expect([...visited].sort()).toEqual(Object.keys(agentMachine.root.states).sort());
  }, 30_000);

  it("a resident actor of the served machine ends where agentMachine's does", async () => {
    const loaded = load(await served()).provide(agentMachine.implementations as never);
    const steps = fc.sample(fc.array(stepArb, { minLength: 5, maxLength: 30 }), { numRuns: 20, seed: 7 });
    for (const seq of steps) {
      const a = createActor(agentMachine).start();
      const b = createActor(loaded).start();
      for (const step of seq) {
        const s = a.getSnapshot();
        const event = eventFor(s.value as string, s.context, step);
        a.send(event);
        b.send(event);
      }
      expect(b.getPersistedSnapshot()).toEqual(a.getPersistedSnapshot());
      a.stop();
      b.stop();
    }
  });
});

describe("machineConfig", () => {
  it("keeps nested states, #id targets, entry actions, final states and guard params, and runs the same", () => {
    const m = setup({
      types: { context: {} as { n: number }, events: {} as { type: "GO" } | { type: "BACK" } | { type: "END" } },
      guards: { below: ({ context }, params: { max: number }) => context.n < params.max },
      actions: { inc: assign({ n: ({ context }) => context.n + 1 }) },
    }).createMachine({
      id: "nest",
      initial: "outer",
      context: { n: 0 },
      states: {
        outer: {
          initial: "a",
          entry: "inc",
          states: {
            a: { on: { GO: { target: "b", guard: { type: "below", params: { max: 3 } } } } },
            b: { on: { BACK: "a", END: "#nest.end" } },
          },
        },
        end: { type: "final" },
      },
    });
    const c = machineConfig(m);
    expect(c).toMatchObject({
      id: "nest",
      initial: "outer",
      context: { n: 0 },
      states: {
        outer: {
          initial: "a",
          entry: ["inc"],
          states: {
            a: { on: { GO: [{ target: "b", guard: { type: "below", params: { max: 3 } } }] } },
            b: { on: { BACK: [{ target: "a" }], END: [{ target: "#nest.end" }] } },
          },
        },
        end: { type: "final" },
      },
    });
    const loaded = createMachine(JSON.parse(JSON.stringify(c))).provide(m.implementations as never);
    let a = initialTransition(m)[0];
    let b = initialTransition(loaded)[0];
    for (const type of ["GO", "BACK", "GO", "BACK", "GO", "END"] as const) {
      a = transition(m, a, { type })[0];
      b = transition(loaded, b, { type })[0];
      expect(b.value).toEqual(a.value);
      expect(b.context).toEqual(a.context);
    }
    expect(a.status).toBe("done");
    expect(b.status).toBe("done");
  });

  it("refuses what JSON cannot carry, naming the place", () => {
    const inlineGuard = createMachine({ id: "m", initial: "a", states: { a: { on: { E: { target: "b", guard: () => true } } }, b: {} } });
    expect(() => machineConfig(inlineGuard)).toThrow(/inline guard at #m\.a on E/);
    const inlineAction = createMachine({ id: "m", initial: "a", states: { a: { entry: () => {} } } });
    expect(() => machineConfig(inlineAction)).toThrow(/inline action at #m\.a entry/);
    const delayed = createMachine({ id: "m", initial: "a", states: { a: { after: { 10: "b" } }, b: {} } });
    expect(() => machineConfig(delayed)).toThrow(/delayed \(after\) transition at #m\.a/);
    const invoking = createMachine({ id: "m", initial: "a", states: { a: { invoke: { src: "x" } } } });
    expect(() => machineConfig(invoking)).toThrow(/invoke at #m\.a/);
  });
});
