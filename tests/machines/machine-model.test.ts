/**
 * Model-based tests of the agent statechart (machines/agent.ts).
 *
 * Invariant: every state and every transition of `describeMachine()` (state ×
 * event × guard branch, in the order XState tries them) is reached by some
 * generated path, and replaying any path one event at a time, with the
 * snapshot persisted and restored through JSON between events, yields
 * exactly the snapshots the machine itself computes.
 *
 * How the paths are generated: `getShortestPaths` from `@xstate/graph` walks
 * the machine with `events(snapshot)` giving the concrete payloads to try
 * from each state, built from its context so every guard can go both ways:
 *  - TASK_STARTED with three small configs (maxSteps 2, verifyMaxAttempts 2,
 *    maxVerifierErrors 2): `submit_result` with and without `mustEndWith`,
 *    and `agent_output`;
 *  - MODEL_STEP (only while `step < maxSteps`): text, one tool call, two tool
 *    calls, a call of `config.completion`;
 *  - TOOL_RESULT for each outstanding call, continuing and terminating;
 *  - VERIFY_REJECTED retryable and final (a fresh hash per attempt, so the
 *    attempt budget is reached), VERIFY_ERROR (reaches the error bound),
 *    VERIFY_PASSED, FEEDBACK_APPENDED, STEP_BUDGET_EXHAUSTED (its guard holds
 *    only once the steps are spent), MODEL_FAILED, CANCEL, TURN_FAILED for
 *    the current and for an unknown turn.
 * Snapshots are keyed by the state value and the context fields the guards
 * read, which bounds the graph. The shortest paths reach every key; each is
 * then extended by every event offered at its end, so every edge of the
 * graph is on some path. Coverage is counted by identifying the transition
 * XState selects (`getTransitionData`) with its entry in `describeMachine()`.
 *
 * Every path is replayed through `createActor(agentMachine)`.
 *
 * Invariant, host side: every state and every transition of
 * `describeMachine()` is also produced by the actor host, and after every
 * write of a snapshot the stored snapshot is the pure machine's replay of the
 * logged transitions and those transitions are the path's, in order. The
 * host paths are generated the same way from the events the host can be made
 * to emit (`hostEventsFor`), translated into scenarios (a task over HTTP, the
 * scripted model's answers, in-process tools, deliveries, watchdog timeouts,
 * verifier answers and errors with the clock moved to the stored retry time,
 * cancels, resets, claims that fail) and played one step per claim against
 * the memory store: tests/helpers/host-paths.ts says how each event is
 * produced and what is checked. Coverage is counted from the transitions the
 * host logged and fails below 100 %, for each transition by each way in
 * (results in-process, delivered and timed out; cancels through the route;
 * turn ends through the reset route and through failing claims).
 */
import { describe, expect, it } from "vitest";
import { createActor, initialTransition, transition } from "xstate";
import { agentMachine, DEFAULT_TURN_CONFIG } from "../../machines/agent.ts";
import type { AgentContext, AgentEvent, TurnConfig } from "../../machines/types.ts";
import { ALL_STATES, ALL_TRANSITIONS, generatePaths, keyOf, type Snap, takenBy, walk } from "../helpers/machine-paths.ts";
import { hostEventsFor, type HostScenario, type Mechanism, runHostScenario, translate } from "../helpers/host-paths.ts";

const small = { maxSteps: 2, verifyMaxAttempts: 2, maxVerifierErrors: 2 };
const CONFIGS: Record<string, TurnConfig> = {
  submitText: { ...DEFAULT_TURN_CONFIG, ...small, completion: "submit_result", mustEndWith: [] },
  submitMust: { ...DEFAULT_TURN_CONFIG, ...small, completion: "submit_result", mustEndWith: ["submit_result"] },
  output: { ...DEFAULT_TURN_CONFIG, ...small, completion: "agent_output", mustEndWith: [] },
};

const usage = { inputTokens: 3, outputTokens: 2 };
const step = (ctx: AgentContext, text: string | null, calls: Array<[string, string]>): AgentEvent => ({
  type: "MODEL_STEP",
  at: 1000 + ctx.step,
  text,
  toolCalls: calls.map(([id, name]) => ({ id: `${id}-${ctx.step}`, name, args: { result: id }, external: false, deadline: 0 })),
  usage,
  cost: 0.01,
});

/** The concrete events to try from a snapshot, built from its context. */
function eventsFor(s: Snap): AgentEvent[] {
  const ctx = s.context;
  const turnId = ctx.turnId ?? "none";
  const always: AgentEvent[] = [
    { type: "TURN_FAILED", at: 5, turnId, reason: "reset", message: "reset" },
    { type: "TURN_FAILED", at: 5, turnId: `other-${turnId}`, reason: "claim_error", message: "claim" },
    { type: "CANCEL", at: 6, reason: "stop" },
  ];
  switch (s.value) {
    case "idle":
    case "done":
    case "failed":
      return [
        ...Object.entries(CONFIGS).map(([name, config]): AgentEvent => ({
          type: "TASK_STARTED",
          at: 10,
          turnId: `${name}-${ctx.turns + 1}`,
          input: "task",
          config,
        })),
        ...always,
      ];
    case "running": {
      const out: AgentEvent[] = [
        { type: "STEP_BUDGET_EXHAUSTED", at: 20 },
        { type: "MODEL_FAILED", at: 21, message: "model down" },
        ...always,
      ];
      if (ctx.step < ctx.config.maxSteps) {
        out.push(
          step(ctx, "thinking", []),
          step(ctx, "", []),
          step(ctx, null, [["a", "search"]]),
          step(ctx, null, [["a", "search"], ["b", "fetch"]]),
          step(ctx, null, [["c", ctx.config.completion]]),
        );
      }
      return out;
    }
    case "waiting-tools":
      return [
        ...Object.keys(ctx.pending).flatMap((id): AgentEvent[] => [
          { type: "TOOL_RESULT", at: 30, toolCallId: id, outcome: { ok: true, value: id }, afterExecution: "continue" },
          { type: "TOOL_RESULT", at: 31, toolCallId: id, outcome: { ok: true, value: id }, afterExecution: "terminate" },
        ]),
        ...always,
      ];
    case "verifying": {
      const hash = `h${ctx.verification.attemptsUsed}`;
      return [
        { type: "VERIFY_PASSED", at: 40, hash, result: { ok: 1 } },
        { type: "VERIFY_REJECTED", at: 41, hash, code: "bad", message: "try again", retryable: true },
        { type: "VERIFY_REJECTED", at: 42, hash, code: "no", message: "never", retryable: false },
        { type: "VERIFY_ERROR", at: 43, message: "verifier down", retryAt: 99 },
        ...always,
      ];
    }
    case "revising":
      return [{ type: "FEEDBACK_APPENDED", at: 50 }, ...always];
    default:
      throw new Error(`no events for state ${String(s.value)}`);
  }
}

const pick = (s: { value: unknown; context: unknown }) => ({ value: s.value, context: s.context });

describe("model-based paths over the agent statechart", () => {
  const paths = generatePaths(eventsFor).map((events) => ({ events }));

  it("reach every state and every transition of describeMachine()", () => {
    const states = new Set<string>();
    const transitions = new Set<string>();
    for (const p of paths) {
      let s = initialTransition(agentMachine)[0] as Snap;
      states.add(String(s.value));
      for (const e of p.events) {
        const key = takenBy(s as Snap, e);
        if (key !== null) transitions.add(key);
        s = transition(agentMachine, s as never, e)[0] as Snap;
        states.add(String(s.value));
      }
    }
    const allStates = ALL_STATES;
    const allTransitions = ALL_TRANSITIONS;
    const missingStates = allStates.filter((x) => !states.has(x));
    const missingTransitions = allTransitions.filter((x) => !transitions.has(x));
    console.log(
      `machine-model: ${paths.length} paths; states ${allStates.filter((x) => states.has(x)).length}/${allStates.length}, ` +
        `transitions ${allTransitions.filter((x) => transitions.has(x)).length}/${allTransitions.length}`,
    );
    expect(missingStates).toEqual([]);
    expect(missingTransitions).toEqual([]);
    // Nothing counted that describeMachine() does not list.
    expect([...transitions].filter((x) => !allTransitions.includes(x))).toEqual([]);
    expect(allTransitions.length).toBeGreaterThanOrEqual(30);
  });

  it("replay through createActor with a JSON round-trip restore after every event", () => {
    let checked = 0;
    for (const p of paths) {
      let expected = initialTransition(agentMachine)[0] as Snap;
      let persisted: unknown = JSON.parse(JSON.stringify(createActor(agentMachine).start().getPersistedSnapshot()));
      for (const e of p.events) {
        expected = transition(agentMachine, expected as never, e)[0] as Snap;
        const actor = createActor(agentMachine, { snapshot: persisted as never }).start();
        actor.send(e);
        const got = actor.getSnapshot();
        expect(pick(got)).toEqual(pick(expected));
        persisted = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
        actor.stop();
        expect((persisted as { value: unknown }).value).toEqual(expected.value);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(paths.length);
  }, 60_000);
});

/**
 * The host-driven paths: generated like the pure ones, from the events the
 * host can be made to emit (hostEventsFor), translated into host scenarios
 * (tests/helpers/host-paths.ts, both with calls in-process where the path
 * allows and with every call external), and a bounded set of them run: for
 * each (transition, mechanism) pair any scenario produces, the shortest
 * scenario that produces it.
 */
describe("model-based paths driven through the host", () => {
  const scenarios: HostScenario[] = [];
  const seen = new Set<string>();
  for (const events of generatePaths(hostEventsFor)) {
    const w = walk(events);
    if (w.events.length === 0) continue;
    for (const external of [false, true]) {
      const sc = translate(w, external);
      if (sc && !seen.has(sc.name)) {
        seen.add(sc.name);
        scenarios.push(sc);
      }
    }
  }
  const feature = (sc: HostScenario, k: number) => `${sc.walk.keys[k]} via ${sc.via[k]}`;
  scenarios.sort((a, b) => a.walk.events.length - b.walk.events.length || (a.name < b.name ? -1 : 1));
  const offered = new Set(scenarios.flatMap((sc) => sc.walk.keys.map((_, k) => feature(sc, k))));
  const chosen = new Set<HostScenario>();
  const planned = new Set<string>();
  for (const f of [...offered].sort()) {
    if (planned.has(f)) continue;
    const sc = scenarios.find((x) => x.walk.keys.some((_, k) => feature(x, k) === f))!;
    chosen.add(sc);
    sc.walk.keys.forEach((_, k) => planned.add(feature(sc, k)));
  }
  // And the shortest scenario that ends in each node of the graph (state and the context the guards read).
  const ends = new Set<string>();
  for (const sc of scenarios) {
    const end = keyOf(sc.walk.snaps[sc.walk.events.length]);
    if (!ends.has(end)) {
      ends.add(end);
      chosen.add(sc);
    }
  }

  it("produces every state and transition of describeMachine() through the host, checked at every write", async () => {
    const states = new Set<string>(["idle"]);
    const byKey = new Map<string, Set<Mechanism>>();
    let checks = 0;
    let claims = 0;
    let retriesWaited = 0;
    for (const sc of chosen) {
      const run = await runHostScenario(sc);
      checks += run.checks;
      claims += run.claims;
      retriesWaited += run.retriesWaited;
      for (const t of run.taken) {
        if (!byKey.has(t.key)) byKey.set(t.key, new Set());
        byKey.get(t.key)!.add(t.via);
        states.add(t.key.split("--> ")[1].replace(" (reenter)", ""));
      }
    }
    const coveredT = ALL_TRANSITIONS.filter((t) => byKey.has(t));
    const coveredS = ALL_STATES.filter((s) => states.has(s));
    console.log(
      `machine-model (host): ${scenarios.length} translatable paths, ${chosen.size} run (${claims} claims, ` +
        `${checks} writes checked, ${retriesWaited} verifier retries waited for); states ${coveredS.length}/${ALL_STATES.length}, ` +
        `transitions ${coveredT.length}/${ALL_TRANSITIONS.length}\n  ` +
        ALL_TRANSITIONS.map((t) => `${t}: ${[...(byKey.get(t) ?? ["MISSING"])].sort().join(", ")}`).join("\n  "),
    );
    expect(ALL_STATES.filter((s) => !states.has(s))).toEqual([]);
    expect(ALL_TRANSITIONS.filter((t) => !byKey.has(t))).toEqual([]);
    expect([...byKey.keys()].filter((t) => !ALL_TRANSITIONS.includes(t))).toEqual([]);
    // Each way in is used: in-process and external results (delivered and timed out), the gate and
    // the plain ending, cancels and turn ends through their routes and through failing claims.
    const via = (t: string) => byKey.get(t) ?? new Set<Mechanism>();
    for (const k of ["terminatesThroughGate", "terminates", "lastOutstanding", "knownCall"]) {
      const t = ALL_TRANSITIONS.find((x) => x.includes(`[${k}]`))!;
      expect([...via(t)].sort()).toEqual(
        k === "lastOutstanding" || k === "knownCall"
          ? ["delivery", "in-process tool", "watchdog timeout"]
          : ["delivery", "in-process tool"],
      );
    }
    for (const from of ["running", "waiting-tools", "verifying", "revising"]) {
      expect(via(`${from} --CANCEL--> failed`).has("cancel route")).toBe(true);
    }
    expect(via("running --CANCEL--> failed").has("cancel after a failed claim")).toBe(true);
    for (const from of ["idle", "done", "failed"]) expect([...via(`${from} --TURN_FAILED--> failed`)]).toEqual(["claim failures"]);
    expect(via("running --TURN_FAILED--> failed").has("reset route")).toBe(true);
    expect(via("verifying --TURN_FAILED--> failed").has("claim failures")).toBe(true);
    expect(checks).toBeGreaterThan(chosen.size);
    expect(retriesWaited).toBeGreaterThan(0);
  }, 60_000);
});
