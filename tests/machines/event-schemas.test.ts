/**
 * The event catalogue is complete: every event the runtime writes parses
 * with the schema of its type (machines/event-log.ts, `RuntimeEvent` of the
 * OpenAPI document), never only with the catch-all `CustomEvent`.
 *
 * The events come from real runs: the model-based host paths
 * (tests/helpers/host-paths.ts: a scripted model, in-process and external
 * tools, deliveries, watchdog timeouts, verifier passes, rejections and
 * errors, cancels, resets, failing claims), one run for each transition of
 * the machine, and a run over HTTP with a guardian, an `afterAttempt` hook,
 * a queued task cancelled and a fork, and tool calls that need approval
 * (approved, rejected, timed out). The types the runs produce are
 * counted: a catalogued type no run produces is listed in `NOT_DRIVEN` with
 * the test that writes it, so a new type shows up here either way.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { StoredEvent as StoredEventRecord } from "../../common/events.ts";
import { EVENT_TYPES } from "../../machines/event-log.ts";
import { agentTool, createGatehouse, defineAgent, defineGuardian, defineTool, handoff, memoryStore, scriptedModel } from "../../mod.ts";
import { CustomEvent, RuntimeEvent, StoredEvent } from "../../routes/schemas.ts";
import { generatePaths, walk } from "../helpers/machine-paths.ts";
import { hostEventsFor, type HostScenario, runHostScenario, translate } from "../helpers/host-paths.ts";

/** Catalogued types these runs do not produce, and where they are written. */
const NOT_DRIVEN: Record<string, string> = {
  submit_result_degraded: "tests/host/host-result-fields.test.ts",
  mail_ignored: "tests/host/host-cancel-race.int.test.ts",
  event_ignored: "no path: the host applies only events the machine takes",
  worker_missing_definition: "tests/host/host-fencing.test.ts",
  snapshot_unrestorable: "tests/host/host-fencing.test.ts",
  turn_upgraded: "tests/host/turn-versions-suite.ts (a version with upgradeFrom takes a pinned turn over)",
  watchdog_skipped: "tests/store/store-conformance.ts (a due call the watchdog cannot time out)",
  schedule_deleted: "tests/routes/by.int.test.ts (DELETE …/schedules/{scheduleId} on an agent that exists)",
};

function failures(events: StoredEventRecord[], where: string): string[] {
  const out: string[] = [];
  for (const e of events) {
    const r = RuntimeEvent.safeParse(e);
    if (!r.success) {
      const custom = CustomEvent.safeParse(e).success ? " (only CustomEvent accepts it)" : "";
      out.push(`${where}: event ${e.id} ${e.type}${custom}: ${z.prettifyError(r.error)} ${JSON.stringify(e.data)}`);
    }
  }
  return out;
}

function hostScenarios(): HostScenario[] {
  const all: HostScenario[] = [];
  const names = new Set<string>();
  for (const events of generatePaths(hostEventsFor)) {
    const w = walk(events);
    if (w.events.length === 0) continue;
    for (const external of [false, true]) {
      const sc = translate(w, external);
      if (sc && !names.has(sc.name)) {
        names.add(sc.name);
        all.push(sc);
      }
    }
  }
  all.sort((a, b) => a.walk.events.length - b.walk.events.length || (a.name < b.name ? -1 : 1));
  // The shortest scenario for each (transition, mechanism) pair.
  const seen = new Set<string>();
  return all.filter((sc) => {
    const features = sc.walk.keys.map((k, i) => `${k} via ${sc.via[i]}`).filter((f) => !seen.has(f));
    for (const f of features) seen.add(f);
    return features.length > 0;
  });
}

/**
 * Tool registry, delegation, handoffs, spend limits and the model's memory: a role with
 * overlapping methods, a parent handing work to a child agent, a turn handed to another definition, a turn over
 * its token limit, and rolling summaries (one that works, one that throws).
 */
async function teamRun(): Promise<StoredEventRecord[]> {
  const fetchPage = defineTool({ name: "fetch", role: "web", description: "fetch", parameters: z.object({ url: z.string() }), execute: () => "page" });
  const fetchUrl = defineTool({ name: "fetch_url", role: "web", description: "fetch", parameters: z.object({ url: z.string() }), execute: () => "page" });
  const child = defineAgent({
    name: "helper",
    instructions: "",
    model: scriptedModel(() => ({ toolCalls: [{ name: "submit_result", args: { result: { ok: true } } }] })),
  });
  const lead = defineAgent({
    name: "lead",
    instructions: "",
    model: scriptedModel((ctx) =>
      ctx.step === 1
        ? { toolCalls: [{ name: "fetch", args: { url: "a" } }, { name: "fetch_url", args: { url: "b" } }] }
        : ctx.step === 2
        ? { toolCalls: [{ name: "helper", args: { input: "help" } }] }
        : { toolCalls: [{ name: "submit_result", args: { result: "done" } }] }
    ),
    tools: [fetchPage, fetchUrl, agentTool(child)],
  });
  // A handoff: the desk's turn goes on under the helper's definition.
  const desk = defineAgent({
    name: "desk",
    instructions: "",
    model: scriptedModel(() => ({ toolCalls: [{ name: "transfer_to_helper", args: {} }] })),
    tools: [handoff(child)],
  });
  const spender = defineAgent({
    name: "spender",
    instructions: "",
    model: scriptedModel(() => ({ text: "thinking", usage: { inputTokens: 50, outputTokens: 50 } })),
    spendLimit: { maxTokensPerTurn: 10 },
  });
  const rememberer = (name: string, summarize: "truncate" | (() => Promise<string>)) =>
    defineAgent({
      name,
      instructions: "",
      model: scriptedModel(() => ({ toolCalls: [{ name: "submit_result", args: { result: "ok" } }] })),
      memory: { keepTurns: 1, summarize },
    });
  const store = memoryStore();
  const gh = createGatehouse({
    agents: [lead, desk, spender, rememberer("keeper", "truncate"), rememberer("forgetter", () => Promise.reject(new Error("summarizer down")))],
    store,
  });
  const enqueue = async (agentId: string, agent: string, input: string, extra: Record<string, unknown> = {}) => {
    const res = await gh.fetch(new Request(`http://gh.test/v1/agents/${agentId}/tasks`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent, input, ...extra }),
    }));
    expect(res.status).toBe(202);
  };
  await enqueue("lead1", "lead", "go");
  await enqueue("desk1", "desk", "go");
  // A task spend limit (auth off: the task records budgetMayRaise).
  await enqueue("spend1", "spender", "go", { spendLimit: { maxTokensPerTurn: 5 } });
  for (const id of ["keep1", "forget1"]) {
    for (let i = 0; i < 3; i++) {
      await enqueue(id, id === "keep1" ? "keeper" : "forgetter", `turn ${i}`);
      await gh.drain();
    }
  }
  await gh.drain();
  const ids = (await store.listAgents({ limit: 100 })).map((a) => a.agentId);
  const out: StoredEventRecord[] = [];
  for (const id of ids) out.push(...await store.readEvents(id, 0, 1000));
  await gh.close();
  return out;
}

async function httpRun(): Promise<StoredEventRecord[]> {
  const ask = defineTool({ name: "ask_human", description: "ask", parameters: z.object({ q: z.string() }) });
  const agent = defineAgent({
    name: "writer",
    instructions: "",
    model: scriptedModel([
      { toolCalls: [{ name: "ask_human", args: { q: "?" } }] },
      { toolCalls: [{ name: "agent_output", args: { summary: "draft" } }] },
      { toolCalls: [{ name: "agent_output", args: { summary: "final" } }] },
    ]),
    tools: [ask],
    output: { schema: z.object({ summary: z.string() }), verify: (c: { summary: string }) => c },
    guardians: [defineGuardian({
      code: "no_drafts",
      review: (c: { summary: string }) =>
        c.summary === "draft" ? { status: "NEEDS_CHANGES", message: "A draft", recommendations: ["Finish it"] } : { status: "PASS" },
    })],
  });
  const store = memoryStore();
  const gh = createGatehouse({
    agents: [agent],
    store,
    verification: {
      // The first attempt logs a hook event of its own type, the second one a type the runtime writes (refused).
      afterAttempt: (info) => ({ events: [{ type: info.attempt === 1 ? "audit" : "task", data: { attempt: info.attempt } }] }),
    },
  });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
    return { status: res.status, body: await res.json() as Record<string, any> };
  };
  const t1 = (await call("POST", "/v1/agents/a1/tasks", { agent: "writer", input: "write" })).body.turnId;
  const t2 = (await call("POST", "/v1/agents/a1/tasks", { agent: "writer", input: "later" })).body.turnId;
  expect((await call("DELETE", `/v1/agents/a1/tasks/${t2}`)).status).toBe(200);
  await gh.drain();
  const page = (await call("GET", "/v1/agents/a1/events?format=json&limit=500")).body;
  const asked = page.events.find((e: StoredEventRecord) => e.type === "tool_call" && e.data.name === "ask_human");
  expect(asked).toBeDefined();
  const fork = await call("POST", "/v1/agents/a1/fork", { atEventId: asked.id, newAgentId: "f1" });
  expect(fork.status).toBe(201);
  expect((await call("POST", "/v1/agents/a1/tool-results", {
    turnId: t1,
    toolCallId: asked.data.toolCallId,
    outcome: { ok: true, value: "yes" },
  })).status).toBe(200);
  await gh.drain();
  const read = async (id: string) => (await call("GET", `/v1/agents/${id}/events?format=json&limit=500`)).body.events;
  return [...await read("a1"), ...await read("f1")];
}

/** Tool calls that need approval: one approved (in-process), one rejected, one left to time out (external). */
async function approvalRun(): Promise<StoredEventRecord[]> {
  const pay = defineTool({ name: "pay", description: "pay", parameters: z.object({ n: z.number() }), needsApproval: true, execute: ({ n }) => n });
  const wire = defineTool({ name: "wire", description: "wire", parameters: z.object({ n: z.number() }), needsApproval: () => true, approvalTimeoutMs: 1 });
  const agent = defineAgent({
    name: "payer",
    instructions: "",
    model: scriptedModel((ctx) =>
      ctx.step === 1
        ? { toolCalls: [{ name: ctx.agentId === "late" ? "wire" : "pay", args: { n: 1 } }] }
        : { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] }
    ),
    tools: [pay, wire],
  });
  const store = memoryStore();
  const gh = createGatehouse({ agents: [agent], store });
  const post = (path: string, body: unknown) =>
    gh.fetch(new Request(`http://gh.test${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
  const out: StoredEventRecord[] = [];
  for (const [id, approved] of [["yes", true], ["no", false], ["late", null]] as const) {
    const turnId = (await (await post(`/v1/agents/${id}/tasks`, { agent: "payer", input: "go" })).json()).turnId;
    await gh.drain();
    const [call] = (await store.getToolCalls(id, turnId)).filter((r) => r.approval);
    if (approved !== null) expect((await post(`/v1/agents/${id}/approvals`, { turnId, toolCallId: call.toolCallId, approved, reason: "r" })).status).toBe(200);
    else {
      await new Promise((r) => setTimeout(r, 5));
      expect((await gh.tick()).timedOut).toBe(1);
    }
    await gh.drain();
    out.push(...await store.readEvents(id, 0, 1000));
  }
  await gh.close();
  return out;
}

describe("the event catalogue", () => {
  it("has a schema for every event the runtime writes (host paths, gate with guardian and hook, cancel, fork, registry, delegation, spend limits, memory)", async () => {
    const seen = new Set<string>();
    const bad: string[] = [];
    const scenarios = hostScenarios();
    for (const sc of scenarios) {
      const { events } = await runHostScenario(sc);
      for (const e of events) seen.add(e.type);
      bad.push(...failures(events, sc.name));
    }
    const http = await httpRun();
    const hook = http.filter((e) => e.type === "audit");
    expect(hook.length).toBeGreaterThan(0);
    for (const e of hook) {
      expect(StoredEvent.safeParse(e).success).toBe(true);
      expect(RuntimeEvent.safeParse(e).success).toBe(false);
    }
    const runtime = http.filter((e) => e.type !== "audit");
    for (const e of runtime) seen.add(e.type);
    bad.push(...failures(runtime, "over HTTP"));
    const team = await teamRun();
    for (const e of team) seen.add(e.type);
    bad.push(...failures(team, "registry, delegation, spend limits, memory"));
    const approvals = await approvalRun();
    for (const e of approvals) seen.add(e.type);
    bad.push(...failures(approvals, "approvals"));
    expect(bad).toEqual([]);
    expect(scenarios.length).toBeGreaterThan(10);

    const driven = EVENT_TYPES.filter((t) => !(t in NOT_DRIVEN));
    expect(driven.filter((t) => !seen.has(t))).toEqual([]);
    expect([...seen].filter((t) => t in NOT_DRIVEN)).toEqual([]);
    expect([...seen].filter((t) => !EVENT_TYPES.includes(t as never))).toEqual([]);
  }, 120_000);

  it("refuses a runtime type with other data, and CustomEvent refuses runtime types", () => {
    const base = { id: 1, at: 0, turnId: null };
    expect(RuntimeEvent.safeParse({ ...base, type: "chunk", data: { step: 1, text: "x" } }).success).toBe(true);
    expect(RuntimeEvent.safeParse({ ...base, type: "chunk", data: { step: 1, text: "x", extra: 1 } }).success).toBe(false);
    expect(StoredEvent.safeParse({ ...base, type: "chunk", data: { step: "one" } }).success).toBe(false);
    expect(CustomEvent.safeParse({ ...base, type: "chunk", data: {} }).success).toBe(false);
    expect(StoredEvent.safeParse({ ...base, type: "audit", data: { anything: [1] } }).success).toBe(true);
  });
});
