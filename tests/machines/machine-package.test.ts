/**
 * The statechart as the package exports it (`agentMachine` from mod.ts,
 * guards and actions included), used with XState's own tools:
 * - `createActor(agentMachine)` runs a whole turn's events (a tool call, a
 *   rejected candidate, the revision, the passing one) to `done`, with the
 *   output and the counters the host would persist;
 * - `@xstate/graph` walks the real machine and reaches every state;
 * - the config served by `GET /v1/machine` carries guards and actions by
 *   name only: `createMachine(body)` draws and loads, but a guarded event
 *   stops its actor with `Guard 'stepVerifies' is not implemented`; given
 *   `agentMachine.implementations` it runs the same turn to the same end.
 *   This is what README.md and docs/http.md say of the served config.
 */
import { getShortestPaths } from "@xstate/graph";
import { describe, expect, it } from "vitest";
import { createActor, createMachine } from "xstate";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";
import { agentMachine } from "../../inspect.ts";
import type { AgentEvent } from "../../inspect.ts";
import { hostEventsFor } from "../helpers/host-paths.ts";
import { ALL_STATES, generatePaths } from "../helpers/machine-paths.ts";

const config = { maxSteps: 8, completion: "agent_output", mustEndWith: ["agent_output"], verifyMaxAttempts: 3, maxVerifierErrors: 3 };
const call = (id: string, name: string, args: unknown, external = false) => ({ id, name, args, external, deadline: 0 });
const usage = { inputTokens: 10, outputTokens: 5 };

/** One turn: a tool call and its result, a rejected candidate, feedback, the revised candidate passing. */
const TURN: AgentEvent[] = [
  { type: "TASK_STARTED", at: 1, turnId: "turn_1", input: "Bill 3 units", config },
  { type: "MODEL_STEP", at: 2, text: "Looking up the rate.", toolCalls: [call("c1", "rate", { sku: "A" })], usage, cost: 0.001 },
  { type: "TOOL_RESULT", at: 3, toolCallId: "c1", outcome: { ok: true, value: 12 }, afterExecution: "continue" },
  { type: "MODEL_STEP", at: 4, text: null, toolCalls: [call("c2", "agent_output", { units: -2 })], usage, cost: 0.001 },
  { type: "VERIFY_REJECTED", at: 5, hash: "h1", code: "bad_units", message: "units must be positive", retryable: true },
  { type: "FEEDBACK_APPENDED", at: 6 },
  { type: "MODEL_STEP", at: 7, text: null, toolCalls: [call("c3", "agent_output", { units: 3 })], usage, cost: 0.001 },
  { type: "VERIFY_PASSED", at: 8, hash: "h2", result: { units: 3 } },
] as AgentEvent[];
const STATES = ["running", "waiting-tools", "running", "verifying", "revising", "running", "verifying", "done"];

async function served(): Promise<Record<string, unknown>> {
  const gh = createGatehouse({ agents: [defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "ok" }]) })] });
  const res = await gh.fetch(new Request("http://gh.test/v1/machine"));
  expect(res.status).toBe(200);
  const body = await res.json();
  await gh.close();
  return body;
}

describe("agentMachine from the package root", () => {
  it("createActor(agentMachine) runs a turn's events to done", () => {
    const actor = createActor(agentMachine).start();
    const seen: string[] = [];
    for (const e of TURN) {
      actor.send(e);
      seen.push(String(actor.getSnapshot().value));
    }
    expect(seen).toEqual(STATES);
    const { context, status } = actor.getSnapshot();
    expect(status).toBe("active");
    expect(context.output).toEqual({ units: 3 });
    expect(context.step).toBe(3);
    expect(context.verification.attemptsUsed).toBe(2); // the rejected attempt and the passing one
    expect(context.turnUsage.cost).toBeCloseTo(0.003);
    actor.stop();
  });

  it("@xstate/graph walks it: its shortest paths reach every state", () => {
    // Keyed by state value (the context grows with every turn, so keying by it would never end).
    const byState = getShortestPaths(agentMachine, {
      events: [{ type: "TASK_STARTED", at: 1, turnId: "t", input: null, config }, { type: "CANCEL", at: 2, reason: "x" }] as never,
      serializeState: (s) => String(s.value),
    });
    expect(new Set(byState.map((p) => String(p.state.value)))).toEqual(new Set(["idle", "running", "failed"]));
    // With the events the host sends in each state (tests/helpers/host-paths.ts), all 7.
    const reached = new Set<string>();
    for (const path of generatePaths(hostEventsFor)) {
      const actor = createActor(agentMachine).start();
      for (const e of path) actor.send(e);
      reached.add(String(actor.getSnapshot().value));
      actor.stop();
    }
    expect([...reached].sort()).toEqual([...ALL_STATES].sort());
  }, 30_000);
});

describe("the served config is for drawing; running it needs the implementations", () => {
  it("createMachine(body) loads, but a guarded event stops its actor with XState's not-implemented error", async () => {
    const actor = createActor(createMachine((await served()) as never));
    const errors: unknown[] = [];
    actor.subscribe({ error: (e) => errors.push(e) });
    actor.start();
    actor.send(TURN[0]);
    expect(actor.getSnapshot().value).toBe("running");
    actor.send(TURN[1]);
    expect(actor.getSnapshot().status).toBe("error");
    expect(String(errors[0])).toContain("Guard 'stepVerifies' is not implemented");
  });

  it("createMachine(body).provide(agentMachine.implementations) runs the same turn to the same end", async () => {
    const machine = createMachine((await served()) as never).provide(agentMachine.implementations as never);
    const actor = createActor(machine).start();
    const seen: string[] = [];
    for (const e of TURN) {
      actor.send(e);
      seen.push(String(actor.getSnapshot().value));
    }
    expect(seen).toEqual(STATES);
    expect((actor.getSnapshot().context as { output: unknown }).output).toEqual({ units: 3 });
    actor.stop();
  });
});
