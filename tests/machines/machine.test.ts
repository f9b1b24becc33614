/**
 * The agent statechart, transition by transition (docs/architecture.md,
 * "The statechart"), plus the rules
 * that keep it durable: pure (no invoke, no delays, assign-only actions),
 * JSON context, versioned snapshots refused when unknown.
 */
import { describe, expect, it } from "vitest";
import { createActor, initialTransition, transition } from "xstate";
import { SnapshotError } from "../../errors/errors.ts";
import { agentMachine, DEFAULT_TURN_CONFIG } from "../../machines/agent.ts";
import { checkSnapshot, initialPersisted } from "../../machines/persist.ts";
import { type AgentEvent, SNAPSHOT_SCHEMA_VERSION, STATES } from "../../machines/types.ts";
import { call, drive, ev, pathTo, type Snap } from "../helpers/machine.ts";

const at = (events: AgentEvent[], from?: Snap) => drive(events, from);

describe("TASK_STARTED starts a new turn", () => {
  it("idle + TASK_STARTED -> running with the task's turn id and config", () => {
    const s = at([ev.task("t1", { maxSteps: 7, mustEndWith: ["finish"], verifyMaxAttempts: 2 })]);
    expect(s.value).toBe("running");
    expect(s.context.turnId).toBe("t1");
    expect(s.context.turns).toBe(1);
    expect(s.context.step).toBe(0);
    expect(s.context.config).toEqual({ ...DEFAULT_TURN_CONFIG, maxSteps: 7, mustEndWith: ["finish"], verifyMaxAttempts: 2 });
    expect(s.context.verification.maxAttempts).toBe(2);
  });

  it("done + TASK_STARTED -> running with a fresh turn that keeps the agent's total usage", () => {
    const done = at(pathTo.done());
    expect(done.value).toBe("done");
    const s = at([ev.task("t2", { maxSteps: 3 })], done);
    expect(s.value).toBe("running");
    expect(s.context).toMatchObject({ turnId: "t2", turns: 2, step: 0, output: null, error: null, pending: {} });
    expect(s.context.turnUsage).toEqual({ inputTokens: 0, outputTokens: 0, cost: 0, steps: 0 });
    expect(s.context.usage).toEqual(done.context.usage);
    expect(s.context.usage.steps).toBe(1);
  });

  it("failed + TASK_STARTED -> running and the previous error is cleared", () => {
    const failed = at(pathTo.failed());
    expect(failed.value).toBe("failed");
    const s = at([ev.task("t2")], failed);
    expect(s.value).toBe("running");
    expect(s.context.error).toBeNull();
    expect(s.context.turnId).toBe("t2");
  });

  it("TASK_STARTED is ignored while a turn is in progress", () => {
    for (const path of [pathTo.running(), pathTo.waitingTools(), pathTo.verifying(), pathTo.revising()]) {
      const s = at(path);
      expect(at([ev.task("t9")], s)).toBe(s);
    }
  });
});

describe("running", () => {
  it("a step with tool calls -> waiting-tools, every call recorded as pending", () => {
    const s = at([ev.task(), ev.step([call("c1", "lookup", { q: 1 }, false, 111), call("c2", "ask", { q: 2 }, true, 222)])]);
    expect(s.value).toBe("waiting-tools");
    expect(s.context.pending).toEqual({
      c1: { name: "lookup", args: { q: 1 }, external: false, deadline: 111 },
      c2: { name: "ask", args: { q: 2 }, external: true, deadline: 222 },
    });
    expect(s.context.step).toBe(1);
  });

  it("a step counts usage and cost on the turn and on the agent", () => {
    const s = at([ev.task(), ev.step([call("c1")], null, { inputTokens: 10, outputTokens: 4 }, 0.25)]);
    expect(s.context.turnUsage).toEqual({ inputTokens: 10, outputTokens: 4, cost: 0.25, steps: 1 });
    expect(s.context.usage).toEqual({ inputTokens: 10, outputTokens: 4, cost: 0.25, steps: 1 });
  });

  it("a step calling agent_output -> verifying with the candidate, other calls of the step are not recorded", () => {
    const s = at([ev.task("t1", { completion: "agent_output" }), ev.step([call("c1"), call("o1", "agent_output", { summary: "x" })])]);
    expect(s.value).toBe("verifying");
    expect(s.context.verification.candidate).toEqual({ toolCallId: "o1", args: { summary: "x" }, from: "agent_output" });
    expect(s.context.pending).toEqual({});
  });

  it("a step calling submit_result -> done with its `result` argument as output", () => {
    const s = at([ev.task(), ev.step([call("s1", "submit_result", { result: { answer: 42 } })])]);
    expect(s.value).toBe("done");
    expect(s.context.output).toEqual({ answer: 42 });
  });

  it("submit_result without a `result` field delivers all of its arguments", () => {
    const s = at([ev.task(), ev.step([call("s1", "submit_result", { answer: 42, note: "n" })])]);
    expect(s.value).toBe("done");
    expect(s.context.output).toEqual({ answer: 42, note: "n" });
  });

  it("text with an empty mustEndWith -> done with the text as output", () => {
    const s = at([ev.task("t1", { mustEndWith: [] }), ev.step([], "final words")]);
    expect(s.value).toBe("done");
    expect(s.context.output).toBe("final words");
  });

  it("empty text with an empty mustEndWith -> done with a placeholder output", () => {
    const s = at([ev.task(), ev.step([], null)]);
    expect(s.value).toBe("done");
    expect(s.context.output).toBe("(no output)");
  });

  it("text while mustEndWith is set -> running again, the step is counted and nothing is output", () => {
    const before = at([ev.task("t1", { mustEndWith: ["finish"] })]);
    const s = at([ev.step([], "I think I am done")], before);
    expect(s.value).toBe("running");
    expect(s).not.toBe(before);
    expect(s.context.step).toBe(1);
    expect(s.context.output).toBeNull();
  });

  it("MODEL_FAILED -> failed with reason model_error", () => {
    const s = at([ev.task(), ev.modelFailed("rate limited")]);
    expect(s.value).toBe("failed");
    expect(s.context.error).toEqual({ reason: "model_error", message: "rate limited" });
  });

  it("STEP_BUDGET_EXHAUSTED -> failed with reason step_budget_exhausted once the budget is spent", () => {
    const s = at([ev.task("t1", { maxSteps: 2, mustEndWith: ["finish"] }), ev.step([], "a"), ev.step([], "b"), ev.budget()]);
    expect(s.value).toBe("failed");
    expect(s.context.error?.reason).toBe("step_budget_exhausted");
  });

  it("STEP_BUDGET_EXHAUSTED is refused while steps are left", () => {
    const s = at([ev.task("t1", { maxSteps: 2, mustEndWith: ["finish"] }), ev.step([], "a")]);
    expect(at([ev.budget()], s)).toBe(s);
  });
});

describe("one rule for finishing: the turn's completion tool decides", () => {
  const gated = { completion: "agent_output" as const };

  it("submit_result on a turn that finishes with agent_output is an ordinary call: waiting-tools, no output", () => {
    const s = at([ev.task("t1", gated), ev.step([call("s1", "submit_result", { result: { amount: 1_000_000 } })])]);
    expect(s.value).toBe("waiting-tools");
    expect(s.context.pending).toEqual({ s1: { name: "submit_result", args: { result: { amount: 1_000_000 } }, external: false, deadline: 10_000 } });
    expect(s.context.output).toBeNull();
    expect(s.context.step).toBe(1);
  });

  it("agent_output on a turn that finishes with submit_result is an ordinary call: no candidate, no verifying", () => {
    const s = at([ev.task("t1", { completion: "submit_result" }), ev.step([call("o1", "agent_output", { summary: "x" })])]);
    expect(s.value).toBe("waiting-tools");
    expect(s.context.verification.candidate).toBeNull();
    expect(Object.keys(s.context.pending)).toEqual(["o1"]);
  });

  it("both completion tools in one step: only the turn's own one finishes", () => {
    const both = [call("s1", "submit_result", { result: 1 }), call("o1", "agent_output", { summary: "x" })];
    const g = at([ev.task("t1", gated), ev.step(both)]);
    expect(g.value).toBe("verifying");
    expect(g.context.verification.candidate?.toolCallId).toBe("o1");
    const u = at([ev.task("t1", { completion: "submit_result" }), ev.step(both)]);
    expect(u.value).toBe("done");
    expect(u.context.output).toBe(1);
  });

  it("text never finishes a turn that finishes with agent_output, even with mustEndWith empty", () => {
    const s = at([ev.task("t1", { ...gated, mustEndWith: [] }), ev.step([], "here is my answer")]);
    expect(s.value).toBe("running");
    expect(s.context.output).toBeNull();
    expect(s.context.step).toBe(1);
  });

  it("a terminating result on a turn that finishes with agent_output -> verifying with the value as candidate", () => {
    const s = at([
      ev.task("t1", gated),
      ev.step([call("c1"), call("c2", "ask", {}, true)]),
      ev.result("c2", { ok: true, value: { amount: 5 } }, "terminate"),
    ]);
    expect(s.value).toBe("verifying");
    expect(s.context.pending).toEqual({});
    expect(s.context.output).toBeNull();
    expect(s.context.verification.candidate).toEqual({ toolCallId: "c2", args: { amount: 5 }, from: "terminate" });
    const passed = at([ev.passed({ amount: 5 }, "h5")], s);
    expect(passed.value).toBe("done");
    expect(passed.context.output).toEqual({ amount: 5 });
    const rejected = at([ev.rejected("h5")], s);
    expect(rejected.value).toBe("revising");
    expect(rejected.context.verification.attemptsUsed).toBe(1);
  });

  it("an error outcome that terminates a gated turn becomes a candidate too (the schema judges it)", () => {
    const outcome = { ok: false as const, error: { type: "boom", message: "no" } };
    const s = at([ev.task("t1", gated), ev.step([call("c1")]), ev.result("c1", outcome, "terminate")]);
    expect(s.value).toBe("verifying");
    expect(s.context.verification.candidate?.args).toEqual({ error: outcome.error });
  });

  it("a damaged completion value finishes nothing: no completion tool, no text, no terminate", () => {
    const bad = { completion: "finish" as never };
    expect(at([ev.task("t1", bad), ev.step([call("s1", "submit_result", { result: 1 })])]).value).toBe("waiting-tools");
    expect(at([ev.task("t1", bad), ev.step([call("o1", "agent_output", {})])]).value).toBe("waiting-tools");
    expect(at([ev.task("t1", { ...bad, mustEndWith: [] }), ev.step([], "text")]).value).toBe("running");
    const t = at([ev.task("t1", bad), ev.step([call("c1")]), ev.result("c1", { ok: true, value: 1 }, "terminate")]);
    expect(t.value).toBe("running");
    expect(t.context.output).toBeNull();
  });
});

describe("waiting-tools", () => {
  it("the last outstanding result -> running", () => {
    const s = at([...pathTo.waitingTools(), ev.result("c1"), ev.result("c2")]);
    expect(s.value).toBe("running");
    expect(s.context.pending).toEqual({});
  });

  it("a result while others are outstanding stays in waiting-tools and resolves only that call", () => {
    const s = at([...pathTo.waitingTools(), ev.result("c2")]);
    expect(s.value).toBe("waiting-tools");
    expect(Object.keys(s.context.pending)).toEqual(["c1"]);
  });

  it('a result with afterExecution "terminate" -> done with its value, other calls dropped', () => {
    const s = at([...pathTo.waitingTools(), ev.result("c1", { ok: true, value: { final: 1 } }, "terminate")]);
    expect(s.value).toBe("done");
    expect(s.context.output).toEqual({ final: 1 });
    expect(s.context.pending).toEqual({});
  });

  it('an error outcome with afterExecution "terminate" ends the turn with the error as output', () => {
    const error = { type: "boom", message: "no" };
    const s = at([...pathTo.waitingTools(), ev.result("c2", { ok: false, error }, "terminate")]);
    expect(s.value).toBe("done");
    expect(s.context.output).toEqual({ error });
  });

  it("a result for an unknown call id is ignored (same snapshot)", () => {
    const s = at(pathTo.waitingTools());
    expect(at([ev.result("nope")], s)).toBe(s);
    expect(at([ev.result("nope", { ok: true, value: 1 }, "terminate")], s)).toBe(s);
  });

  it("a second result for an already resolved call is ignored", () => {
    const s = at([...pathTo.waitingTools(), ev.result("c1")]);
    expect(at([ev.result("c1", { ok: true, value: "again" })], s)).toBe(s);
  });
});

describe("verifying", () => {
  it("VERIFY_PASSED -> done with the verifier's return value as output", () => {
    const s = at([...pathTo.verifying(), ev.passed({ summary: "s", testsRun: 12 }, "hX")]);
    expect(s.value).toBe("done");
    expect(s.context.output).toEqual({ summary: "s", testsRun: 12 });
    expect(s.context.verification).toMatchObject({ attemptsUsed: 1, lastCandidateHash: "hX", lastOutcome: "passed", candidate: null });
  });

  it("a retryable rejection with attempts left -> revising, the attempt is counted", () => {
    const s = at([...pathTo.verifying({ verifyMaxAttempts: 3 }), ev.rejected("h1", true)]);
    expect(s.value).toBe("revising");
    expect(s.context.verification).toMatchObject({ attemptsUsed: 1, lastCandidateHash: "h1", lastOutcome: "rejected" });
    expect(s.context.verification.lastRejection).toMatchObject({ code: "tests_failed", retryable: true });
  });

  it("a rejection with retryable false -> failed with reason verification_rejected", () => {
    const s = at([...pathTo.verifying({ verifyMaxAttempts: 3 }), ev.rejected("h1", false, "unsafe")]);
    expect(s.value).toBe("failed");
    expect(s.context.error?.reason).toBe("verification_rejected");
    expect(s.context.error?.message).toContain("unsafe");
  });

  it("a rejection that uses the last attempt -> failed with reason verification_exhausted", () => {
    const s = at([
      ...pathTo.verifying({ verifyMaxAttempts: 2 }),
      ev.rejected("h1"),
      ev.feedback(),
      ev.step([call("out2", "agent_output", { summary: "s2" })]),
      ev.rejected("h2"),
    ]);
    expect(s.value).toBe("failed");
    expect(s.context.error?.reason).toBe("verification_exhausted");
    expect(s.context.verification.attemptsUsed).toBe(2);
  });

  it("a verifier system error below the bound stays in verifying, is not counted and sets the retry time", () => {
    const s = at([...pathTo.verifying({ maxVerifierErrors: 3 }), ev.verifierError(777)]);
    expect(s.value).toBe("verifying");
    expect(s.context.verification).toMatchObject({ attemptsUsed: 0, systemErrors: 1, retryAt: 777, lastOutcome: "system_error" });
    expect(s.context.verification.candidate?.toolCallId).toBe("out1");
  });

  it("verifier system errors up to the bound -> failed with reason verifier_error", () => {
    const s = at([...pathTo.verifying({ maxVerifierErrors: 2 }), ev.verifierError(), ev.verifierError()]);
    expect(s.value).toBe("failed");
    expect(s.context.error?.reason).toBe("verifier_error");
    expect(s.context.verification.attemptsUsed).toBe(0);
  });
});

describe("revising", () => {
  it("FEEDBACK_APPENDED -> running and the candidate is cleared", () => {
    const s = at([...pathTo.revising(), ev.feedback()]);
    expect(s.value).toBe("running");
    expect(s.context.verification.candidate).toBeNull();
    expect(s.context.verification.attemptsUsed).toBe(1);
  });
});

describe("CANCEL", () => {
  const inTurn = {
    running: pathTo.running(),
    "waiting-tools": pathTo.waitingTools(),
    verifying: pathTo.verifying(),
    revising: pathTo.revising(),
  };
  for (const [state, path] of Object.entries(inTurn)) {
    it(`${state} + CANCEL -> failed with reason cancelled and no pending call left`, () => {
      const before = at(path);
      expect(before.value).toBe(state);
      const s = at([ev.cancel("stop now")], before);
      expect(s.value).toBe("failed");
      expect(s.context.error).toEqual({ reason: "cancelled", message: "stop now" });
      expect(s.context.pending).toEqual({});
    });
  }

  for (const [state, path] of Object.entries({ done: pathTo.done(), failed: pathTo.failed(), idle: pathTo.idle() })) {
    it(`CANCEL is ignored in ${state} (no turn in progress)`, () => {
      const s = at(path);
      expect(s.value).toBe(state);
      expect(at([ev.cancel()], s)).toBe(s);
    });
  }
});

describe("events a state does not accept", () => {
  it("leave the snapshot unchanged", () => {
    const all = [
      ev.task("tX"), ev.step([], "x"), ev.modelFailed(), ev.budget(), ev.result("c1"), ev.passed(), ev.rejected(),
      ev.verifierError(), ev.feedback(), ev.cancel(),
    ];
    const accepts: Record<string, string[]> = {
      idle: ["TASK_STARTED"],
      running: ["MODEL_STEP", "MODEL_FAILED", "CANCEL"],
      "waiting-tools": ["TOOL_RESULT", "CANCEL"],
      verifying: ["VERIFY_PASSED", "VERIFY_REJECTED", "VERIFY_ERROR", "CANCEL"],
      revising: ["FEEDBACK_APPENDED", "CANCEL"],
      done: ["TASK_STARTED"],
      failed: ["TASK_STARTED"],
    };
    const paths = [pathTo.idle(), pathTo.running(), pathTo.waitingTools(), pathTo.verifying(), pathTo.revising(), pathTo.done(), pathTo.failed()];
    for (const p of paths) {
      const s = at(p);
      for (const e of all) {
        const next = at([e], s);
        if (accepts[s.value as string].includes(e.type)) expect(next, `${s.value} + ${e.type}`).not.toBe(s);
        else expect(next, `${s.value} + ${e.type}`).toBe(s);
      }
    }
  });
});

describe("the machine is pure", () => {
  it("no state invokes an actor, delays a transition, or runs entry/exit/always actions", () => {
    const nodes = Object.values(agentMachine.root.states);
    expect(nodes.map((n) => n.key).sort()).toEqual([...STATES].sort());
    for (const n of nodes) {
      expect(n.invoke, n.key).toEqual([]);
      expect(n.after, n.key).toEqual([]);
      expect(n.entry, n.key).toEqual([]);
      expect(n.exit, n.key).toEqual([]);
      expect(n.always ?? [], n.key).toEqual([]);
      expect(n.type, n.key).toBe("atomic");
    }
    expect(agentMachine.root.invoke).toEqual([]);
    expect(agentMachine.root.after).toEqual([]);
    expect(Object.keys(agentMachine.implementations.actors)).toEqual([]);
    expect(Object.keys(agentMachine.implementations.delays)).toEqual([]);
  });

  it("every transition action is a named assign", () => {
    const impl = agentMachine.implementations.actions as Record<string, { type?: string }>;
    let seen = 0;
    for (const n of Object.values(agentMachine.root.states)) {
      for (const [, ts] of n.transitions) {
        for (const t of ts) {
          for (const a of t.actions) {
            expect(typeof a, `${n.key}: action ${String(a)}`).toBe("string");
            expect(impl[a as string]?.type, `${n.key}: ${String(a)}`).toBe("xstate.assign");
            seen++;
          }
        }
      }
    }
    expect(seen).toBeGreaterThan(10);
  });

  it("transitions return no executable side effects", () => {
    const events = [...pathTo.revising(), ev.feedback(), ev.step([call("c1")]), ev.result("c1"), ev.step([call("o2", "agent_output", { summary: "s2" })]), ev.passed()];
    let [s, actions] = initialTransition(agentMachine);
    expect(actions).toEqual([]);
    for (const e of events) {
      [s, actions] = transition(agentMachine, s, e);
      expect(actions, e.type).toEqual([]);
    }
    expect(s.value).toBe("done");
  });
});

describe("snapshots", () => {
  const longPath: AgentEvent[] = [
    ...pathTo.revising(),
    ev.feedback(),
    ev.step([call("c1", "lookup", { nested: { a: [1, 2, { b: null }] } }), call("c2", "ask", {}, true)], "thinking"),
    ev.result("c1", { ok: false, error: { type: "timeout", message: "late", retryable: true, metadata: { ms: 5 } } }),
  ];

  it("the context stays JSON-serialisable through a turn", () => {
    let s = drive([]);
    for (const e of longPath) {
      s = drive([e], s);
      expect(JSON.parse(JSON.stringify(s.context))).toStrictEqual(s.context);
    }
    expect(s.value).toBe("waiting-tools");
  });

  it("initialPersisted is the initial actor's persisted snapshot, a fresh copy each call", () => {
    const fresh = createActor(agentMachine).getPersistedSnapshot();
    const a = initialPersisted();
    expect(a).toStrictEqual(fresh);
    // An actor restored from one copy moves on without touching the next copy.
    const actor = createActor(agentMachine, { snapshot: a as never }).start();
    for (const e of longPath) actor.send(e);
    actor.stop();
    (a.context as { turns: number }).turns = 99;
    expect(initialPersisted()).toStrictEqual(fresh);
    expect(initialPersisted()).not.toBe(initialPersisted());
  });

  it("persisted snapshots carry schemaVersion", () => {
    expect(initialPersisted().context.schemaVersion).toBe(SNAPSHOT_SCHEMA_VERSION);
    const actor = createActor(agentMachine).start();
    for (const e of longPath) actor.send(e);
    const p = actor.getPersistedSnapshot() as unknown as { context: { schemaVersion: number } };
    expect(p.context.schemaVersion).toBe(SNAPSHOT_SCHEMA_VERSION);
    actor.stop();
  });

  it("a JSON round-tripped snapshot restores to the same state and continues like the original", () => {
    const a = createActor(agentMachine).start();
    for (const e of longPath) a.send(e);
    const stored = JSON.parse(JSON.stringify(a.getPersistedSnapshot()));
    const b = createActor(agentMachine, { snapshot: checkSnapshot(stored) as never }).start();
    expect(b.getPersistedSnapshot()).toEqual(a.getPersistedSnapshot());
    for (const e of [ev.result("c2"), ev.step([call("o9", "agent_output", { summary: "end" })]), ev.passed()]) {
      a.send(e);
      b.send(e);
    }
    expect(b.getSnapshot().value).toBe("done");
    expect(b.getPersistedSnapshot()).toEqual(a.getPersistedSnapshot());
    a.stop();
    b.stop();
  });

  it("checkSnapshot accepts the current version unchanged", () => {
    const p = JSON.parse(JSON.stringify(createActor(agentMachine).getPersistedSnapshot()));
    expect(checkSnapshot(p)).toEqual(p);
  });

  /** The persisted snapshot after `events`, written back in the version 1 shape (no completion, no candidate source). */
  const v1After = (events: AgentEvent[]) => {
    const p = JSON.parse(JSON.stringify(agentMachine.getPersistedSnapshot(drive(events)))) as Record<string, any>;
    p.context.schemaVersion = 1;
    delete p.context.config.completion;
    if (p.context.verification.candidate) delete p.context.verification.candidate.from;
    return p;
  };

  describe("version 1 snapshots are upgraded without reopening a way around the gate", () => {
    it("a running turn of an agent whose definition offers submit_result keeps submit_result", () => {
      const p = checkSnapshot(v1After([ev.task("t1", { mustEndWith: [] })]), { completion: "submit_result" });
      expect(p.context.schemaVersion).toBe(SNAPSHOT_SCHEMA_VERSION);
      expect(p.context.config.completion).toBe("submit_result");
      const b = createActor(agentMachine, { snapshot: p as never }).start();
      b.send(ev.step([call("s1", "submit_result", { result: 7 })]));
      expect(b.getSnapshot().value).toBe("done");
      b.stop();
    });

    it("without a hint (the reader does not run the agent) the turn finishes through the gate only", () => {
      const p = checkSnapshot(v1After([ev.task("t1", { mustEndWith: [] })]));
      expect(p.context.config.completion).toBe("agent_output");
      const b = createActor(agentMachine, { snapshot: p as never }).start();
      b.send(ev.step([call("s1", "submit_result", { result: 7 })]));
      expect(b.getSnapshot().value).toBe("waiting-tools");
      b.stop();
    });

    it("any sign of a gated turn wins over a submit_result hint", () => {
      const signs: Array<[string, AgentEvent[]]> = [
        ["mustEndWith names agent_output", [ev.task("t1", { mustEndWith: ["agent_output"] })]],
        ["a candidate in verifying", pathTo.verifying()],
        ["revising", pathTo.revising()],
      ];
      for (const [what, events] of signs) {
        const p = checkSnapshot(v1After(events), { completion: "submit_result" });
        expect(p.context.config.completion, what).toBe("agent_output");
      }
    });

    it("a version 1 candidate came from agent_output and keeps its call", () => {
      const p = checkSnapshot(v1After(pathTo.verifying()), { completion: "agent_output" });
      expect(p.value).toBe("verifying");
      expect(p.context.verification.candidate).toEqual({ toolCallId: "out1", args: { summary: "s" }, from: "agent_output" });
      const b = createActor(agentMachine, { snapshot: p as never }).start();
      b.send(ev.passed());
      expect(b.getSnapshot().value).toBe("done");
      b.stop();
    });
  });

  const base = () => JSON.parse(JSON.stringify(initialPersisted())) as Record<string, any>;
  const refused: Array<[string, () => unknown, RegExp]> = [
    ["an unknown schema version", () => ({ ...base(), context: { ...base().context, schemaVersion: 999 } }), /schema version 999/],
    ["an older version without a migration", () => ({ ...base(), context: { ...base().context, schemaVersion: 0 } }), /schema version 0/],
    ["a missing schema version", () => {
      const s = base();
      delete s.context.schemaVersion;
      return s;
    }, /schema version/],
    ["an unknown state", () => ({ ...base(), value: "sleeping" }), /unknown state "sleeping"/],
    ["a nested state value", () => ({ ...base(), value: { running: "x" } }), /unknown state/],
    ["a snapshot without context", () => ({ ...base(), context: undefined }), /no context/],
    ["something that is not an object", () => "idle", /not an object/],
    ["null", () => null, /not an object/],
  ];
  for (const [what, make, message] of refused) {
    it(`checkSnapshot refuses ${what} with SnapshotError`, () => {
      let err: unknown;
      try {
        checkSnapshot(make());
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(SnapshotError);
      expect((err as SnapshotError).code).toBe("snapshot_unrestorable");
      expect((err as Error).message).toMatch(message);
    });
  }
});
