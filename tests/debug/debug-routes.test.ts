/**
 * The debugging routes over HTTP, on the memory store: the agents list
 * (filters, cursor), time travel (history), forks, export/replay and the
 * verifier what-if. Store-level behaviour is in tests/store/store-conformance.ts,
 * the replay property in tests/host/time-travel-property.test.ts.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineGuardian, defineTool, scriptedModel, VerificationRejected } from "../../mod.ts";
import { AgentList, HistoryView } from "../../routes/debug-schemas.ts";
import { memoryStoreState } from "../../store/memory.ts";
import { helperAgent, setup } from "../helpers/debug.ts";

describe("GET /v1/agents", () => {
  it("lists newest first, filters by state, definition and time, and pages with a cursor", async () => {
    const { gh, clock, call } = setup();
    for (const [id, def] of [["a1", "helper"], ["a2", "other"], ["a3", "helper"]]) {
      clock.t += 10;
      expect((await call("POST", `/v1/agents/${id}/tasks`, { agent: def, input: "hi" })).status).toBe(202);
    }
    await gh.drain();
    const all = AgentList.parse((await call("GET", "/v1/agents")).body);
    expect(all.agents.map((a) => a.agentId).sort()).toEqual(["a1", "a2", "a3"]);
    expect(all.nextCursor).toBeNull();
    for (let i = 1; i < all.agents.length; i++) expect(all.agents[i - 1].updatedAtMs >= all.agents[i].updatedAtMs).toBe(true);
    expect(all.agents.every((a) => a.state === "waiting-tools")).toBe(true);

    const others = AgentList.parse((await call("GET", "/v1/agents?agent=other")).body);
    expect(others.agents.map((a) => a.agentId)).toEqual(["a2"]);
    expect((await call("GET", "/v1/agents?state=done")).body.agents).toEqual([]);

    // Paging by one reaches each agent once.
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 5; i++) {
      const page = AgentList.parse((await call("GET", `/v1/agents?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)).body);
      seen.push(...page.agents.map((a) => a.agentId));
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(all.agents.map((a) => a.agentId));
    const newest = all.agents[0].updatedAtMs;
    expect((await call("GET", `/v1/agents?updatedSince=${newest}`)).body.agents.length).toBeGreaterThanOrEqual(1);
    expect((await call("GET", `/v1/agents?updatedSince=${newest + 1}`)).body.agents).toEqual([]);
    await gh.close();
  });

  it("refuses bad queries with validation_failed", async () => {
    const { gh, call } = setup();
    for (const q of ["state=sleeping", "limit=0", "limit=101", "cursor=nope", "updatedSince=-1", "extra=1"]) {
      const r = await call("GET", `/v1/agents?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.type).toBe("application/problem+json");
      expect(r.body.code).toBe("validation_failed");
    }
    await gh.close();
  });
});

describe("GET /v1/agents/:agentId/history/:eventId", () => {
  it("answers the agent after each event, ending with the head", async () => {
    const { gh, call } = setup();
    await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hello" });
    await gh.drain();
    const head = await gh.store.getAgent("a1");
    const events = await gh.store.readEvents("a1", 0, 1000);
    const first = HistoryView.parse((await call("GET", "/v1/agents/a1/history/1")).body);
    expect(first.state).toBe("idle");
    expect(first.event.type).toBe("task_enqueued");
    const started = events.find((e) => e.type === "transition")!;
    // The turn's start rides with its first step's commit (store/port.ts invariant `turn-start`): the history at
    // it is the agent at the end of that commit (`throughEventId`), the step's call recorded.
    const atStart = HistoryView.parse((await call("GET", `/v1/agents/a1/history/${started.id}`)).body);
    expect(atStart.state).toBe("waiting-tools");
    expect(atStart.messages[0]).toEqual({ role: "user", content: "hello" });
    expect(atStart.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const last = HistoryView.parse((await call("GET", `/v1/agents/a1/history/${head!.lastEventId}`)).body);
    expect(last.snapshot).toEqual(head!.snapshot);
    expect(last.state).toBe("waiting-tools");
    expect(last.messages).toEqual(await gh.store.readMessages("a1"));
    expect(last.lastEventId).toBe(head!.lastEventId);
    await gh.close();
  });

  it("answers problems for unknown agents and events and bad ids", async () => {
    const { gh, call } = setup();
    await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hello" });
    const cases: Array<[string, number, string]> = [
      ["/v1/agents/nobody/history/1", 404, "agent_not_found"],
      ["/v1/agents/a1/history/99", 404, "event_not_found"],
      ["/v1/agents/a1/history/0", 400, "validation_failed"],
      ["/v1/agents/a1/history/x", 400, "validation_failed"],
    ];
    for (const [path, status, code] of cases) {
      const r = await call("GET", path);
      expect([r.status, r.body.code], path).toEqual([status, code]);
    }
    await gh.close();
  });
});

/** The memory store's records of one agent, and the cross-agent entries naming it. */
function agentState(store: Parameters<typeof memoryStoreState>[0], agentId: string) {
  const s = memoryStoreState(store) as { agents: Array<[string, any]>; ready: Array<[string, Array<[string, number]>]>; deadlines: Array<[string, number]> };
  return {
    records: s.agents.find(([id]) => id === agentId)?.[1] ?? null,
    ready: s.ready.map(([t, m]) => [t, m.filter(([id]) => id === agentId)]),
    deadlines: s.deadlines.filter(([k]) => k.startsWith(`${agentId}\n`)),
  };
}

describe("POST /v1/agents/:agentId/fork", () => {
  async function sourceWaiting() {
    const ctx = setup();
    await ctx.call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "hello" });
    await ctx.gh.drain();
    const events = await ctx.gh.store.readEvents("a1", 0, 1000);
    const toolCall = events.find((e) => e.type === "tool_call" && e.data.external === true)!;
    return { ...ctx, events, toolCall };
  }

  it("forks at a pending external call onto another definition; the source changes by one forked_to event only", async () => {
    const { gh, call, clock, events } = await sourceWaiting();
    const at = events[events.length - 1].id;
    const before = agentState(gh.store, "a1");
    const history = HistoryView.parse((await call("GET", `/v1/agents/a1/history/${at}`)).body);
    clock.t += 1_000;
    const r = await call("POST", "/v1/agents/a1/fork", { atEventId: at, newAgentId: "f1", agent: "other" });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ agentId: "f1", agent: "other", state: "waiting-tools", forkedFrom: { agentId: "a1", atEventId: at, eventId: at + 1 } });
    expect(r.body.pendingToolCalls).toHaveLength(1);

    // The source: exactly one more event, forked_to, and nothing else.
    const after = agentState(gh.store, "a1");
    const forkedTo = after.records.events.pop();
    after.records.eventBytes.pop();
    expect(forkedTo).toMatchObject({ id: at + 1, type: "forked_to", turnId: null, data: { agentId: "f1", atEventId: at } });
    after.records.head.lastEventId -= 1;
    expect(after).toEqual(before);

    // The fork: the history point's snapshot and messages, its own first event, the call pending.
    const fork = (await gh.store.getAgent("f1"))!;
    expect(fork.snapshot).toEqual(history.snapshot);
    expect(fork.agentName).toBe("other");
    expect(await gh.store.readMessages("f1")).toEqual(history.messages);
    const [first] = await gh.store.readEvents("f1", 0, 10);
    expect(first).toMatchObject({ id: 1, type: "forked_from", data: { agentId: "a1", atEventId: at, messageCount: history.messages.length } });
    const forkHistory = HistoryView.parse((await call("GET", "/v1/agents/f1/history/1")).body);
    expect(forkHistory.snapshot).toEqual(history.snapshot);

    // A result delivered to the fork finishes it with the other definition's model; the source still waits.
    const pending = r.body.pendingToolCalls[0];
    const d = await call("POST", "/v1/agents/f1/tool-results", { turnId: pending.turnId, toolCallId: pending.toolCallId, outcome: { ok: true, value: "yes" } });
    expect([d.status, d.body]).toEqual([200, { accepted: true, duplicate: false, contract: { passed: true, mismatch: null } }]);
    await gh.drain();
    const done = (await call("GET", "/v1/agents/f1")).body;
    expect(done.state).toBe("done");
    expect(done.output).toBe("yes from other");
    expect((await gh.store.getAgent("a1"))!.state).toBe("waiting-tools");
    // The fork's log replays to its head.
    const last = (await gh.store.getAgent("f1"))!;
    const replayed = HistoryView.parse((await call("GET", `/v1/agents/f1/history/${last.lastEventId}`)).body);
    expect(replayed.snapshot).toEqual(last.snapshot);
    expect(replayed.messages).toEqual(await gh.store.readMessages("f1"));
    await gh.close();
  });

  it("forks before the turn started, then takes a task like any agent", async () => {
    const { gh, call } = await sourceWaiting();
    const r = await call("POST", "/v1/agents/a1/fork", { atEventId: 1, newAgentId: "f2" });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ state: "idle", activeTurnId: null, pendingToolCalls: [], agent: "helper" });
    expect((await call("POST", "/v1/agents/f2/tasks", { agent: "helper", input: "again" })).status).toBe(202);
    await gh.drain();
    expect((await call("GET", "/v1/agents/f2")).body.state).toBe("waiting-tools");
    await gh.close();
  });

  it("answers problems and writes nothing on bad forks", async () => {
    const { gh, call } = await sourceWaiting();
    await call("POST", "/v1/agents/b1/tasks", { agent: "helper", input: "x" });
    const whole = () => JSON.stringify(memoryStoreState(gh.store));
    const before = whole();
    const cases: Array<[string, unknown, number, string]> = [
      ["/v1/agents/a1/fork", { atEventId: 1, newAgentId: "b1" }, 409, "agent_exists"],
      ["/v1/agents/a1/fork", { atEventId: 1, newAgentId: "a1" }, 409, "agent_exists"],
      ["/v1/agents/a1/fork", { atEventId: 999, newAgentId: "f3" }, 404, "event_not_found"],
      ["/v1/agents/nobody/fork", { atEventId: 1, newAgentId: "f3" }, 404, "agent_not_found"],
      ["/v1/agents/a1/fork", { atEventId: 1, newAgentId: "f3", agent: "ghost" }, 422, "unknown_agent_definition"],
      ["/v1/agents/a1/fork", { atEventId: 0, newAgentId: "f3" }, 400, "validation_failed"],
      ["/v1/agents/a1/fork", { atEventId: 1, newAgentId: "bad{id}" }, 400, "validation_failed"],
      ["/v1/agents/a1/fork", { atEventId: 1 }, 400, "validation_failed"],
    ];
    for (const [path, body, status, code] of cases) {
      const r = await call("POST", path, body);
      expect([r.status, r.body.code], JSON.stringify(body)).toEqual([status, code]);
    }
    expect(whole()).toBe(before);
    await gh.close();
  });
});

describe("POST /v1/agents/:agentId/what-if", () => {
  const Summary = z.object({ summary: z.string() });
  function gateSetup() {
    const accepted = new Set(["v2"]);
    const fixer = defineAgent({
      name: "fixer",
      instructions: "fix",
      model: scriptedModel(({ step }) => ({ toolCalls: [{ name: "agent_output", args: { summary: `v${step}` } }] })),
      output: {
        schema: Summary,
        verify: (c: { summary: string }) => {
          if (!accepted.has(c.summary)) throw new VerificationRejected({ message: `${c.summary} is not it`, code: "too_vague", retryable: true });
        },
      },
    });
    const strict = defineGuardian({ code: "strict", review: (c: { summary: string }) => ({ status: c.summary === "v1" ? "PASS" : "NEEDS_CHANGES", message: "more" }) });
    const ctx = setup({ agents: [fixer, helperAgent()], guardians: [strict] });
    return { ...ctx, accepted };
  }

  it("sets the recorded judgment of each candidate next to a new one, and writes nothing", async () => {
    const { gh, call, accepted } = gateSetup();
    await call("POST", "/v1/agents/g1/tasks", { agent: "fixer", input: "go" });
    await gh.drain();
    expect((await call("GET", "/v1/agents/g1")).body.state).toBe("done");
    const before = JSON.stringify(memoryStoreState(gh.store));

    const same = await call("POST", "/v1/agents/g1/what-if", {});
    expect(same.status).toBe(200);
    expect(same.body.verifier).toEqual({ kind: "output_verifier", name: "output_verifier:fixer" });
    expect(same.body.candidates.map((c: any) => [c.candidate, c.recorded.outcome, c.recorded.code ?? null, c.now.outcome, c.changed])).toEqual([
      [{ summary: "v1" }, "rejected", "too_vague", "rejected", false],
      [{ summary: "v2" }, "passed", null, "passed", false],
    ]);

    // The definition's verifier as it is now: it would have taken v1 and refused v2.
    accepted.clear();
    accepted.add("v1");
    const now = await call("POST", "/v1/agents/g1/what-if", {});
    expect(now.body.candidates.map((c: any) => [c.now.outcome, c.changed])).toEqual([["passed", true], ["rejected", true]]);

    const g = await call("POST", "/v1/agents/g1/what-if", { guardian: "strict" });
    expect(g.body.verifier).toEqual({ kind: "guardian", name: "strict" });
    expect(g.body.candidates.map((c: any) => [c.now.outcome, c.now.code ?? null])).toEqual([["passed", null], ["rejected", "NEEDS_CHANGES"]]);

    expect(JSON.stringify(memoryStoreState(gh.store))).toBe(before);
    await gh.close();
  });

  it("answers problems for unknown guardians and agents", async () => {
    const { gh, call } = gateSetup();
    await call("POST", "/v1/agents/h1/tasks", { agent: "helper", input: "go" });
    const cases: Array<[string, unknown, number, string]> = [
      ["/v1/agents/h1/what-if", {}, 422, "unknown_guardian"],
      ["/v1/agents/h1/what-if", { guardian: "ghost" }, 422, "unknown_guardian"],
      ["/v1/agents/nobody/what-if", {}, 404, "agent_not_found"],
      ["/v1/agents/h1/what-if", { guardian: 3 }, 400, "validation_failed"],
    ];
    for (const [path, body, status, code] of cases) {
      const r = await call("POST", path, body);
      expect([r.status, r.body.code], JSON.stringify(body)).toEqual([status, code]);
    }
    await gh.close();
  });
});
