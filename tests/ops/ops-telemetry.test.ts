/**
 * What an operator sees of a turn with a tool call and a verification:
 * OpenTelemetry spans (recorded by the SDK's in-memory exporter), the
 * Prometheus scrape of `GET /metrics` (parsed, values checked), the log
 * lines, and the lease in the agent view. docs/operations.md is the contract.
 */
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel, type Gatehouse, type Logger } from "../../mod.ts";
import { createMetrics, meteredStore } from "../../actors/observe/metrics.ts";
import { enqueue, get, manualClock, seqIds } from "../fixtures/gate-kit.ts";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  trace.disable();
  await provider.shutdown();
});
beforeEach(() => exporter.reset());

const add = defineTool({
  name: "add",
  description: "Adds two numbers",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});
const askHuman = defineTool({ name: "ask_human", description: "Ask a human", parameters: z.object({ q: z.string() }) });

/** Step 1 calls `add`, step 2 proposes the answer; the verifier accepts it. */
const calc = defineAgent({
  name: "calc",
  instructions: "Add.",
  model: scriptedModel(({ step }) =>
    step === 1
      ? { toolCalls: [{ id: "c1", name: "add", args: { a: 2, b: 3 } }], usage: { inputTokens: 10, outputTokens: 4 } }
      : { toolCalls: [{ name: "agent_output", args: { sum: 5 } }], usage: { inputTokens: 20, outputTokens: 6 } }
  ),
  tools: [add],
  output: { schema: z.object({ sum: z.number() }), verify: (c: { sum: number }) => ({ checked: c.sum }) },
});

interface Line {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}
function captureLogger(lines: Line[]): Logger {
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void lines.push({ level, msg, fields });
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** Parses the text exposition format 0.0.4: samples by `name{labels}`, and the declared types. */
function parseExposition(text: string): { samples: Map<string, number>; types: Map<string, string> } {
  const samples = new Map<string, number>();
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const t = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (t) {
      types.set(t[1], t[2]);
      continue;
    }
    if (line.startsWith("# HELP ")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${JSON.stringify(line)}`);
    samples.set(m[1], m[2] === "+Inf" ? Infinity : Number(m[2]));
  }
  return { samples, types };
}

async function scrape(gh: Gatehouse, headers: Record<string, string> = {}) {
  const res = await gh.fetch(new Request("http://gatehouse/metrics", { headers }));
  return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
}

describe("a turn with a tool call and a verification", () => {
  it("records a turn span with model step, tool call and verification children, ids and usage as attributes", async () => {
    const lines: Line[] = [];
    const gh = createGatehouse({ agents: [calc], clock: manualClock(), ids: seqIds(), logger: captureLogger(lines) });
    expect((await enqueue(gh, "a1", { agent: "calc", input: "2+3" })).status).toBe(202);
    await gh.drain();
    expect((await gh.store.getAgent("a1"))!.state).toBe("done");

    const spans = exporter.getFinishedSpans();
    const named = (n: string) => spans.filter((s) => s.name === n);
    expect(named("gatehouse.turn")).toHaveLength(1);
    expect(named("gatehouse.model_step")).toHaveLength(2);
    expect(named("gatehouse.tool_call")).toHaveLength(1);
    expect(named("gatehouse.verification")).toHaveLength(1);
    const turn = named("gatehouse.turn")[0];
    const turnId = turn.attributes["gatehouse.turn_id"];
    expect(turnId).toMatch(/^turn_/);
    expect(turn.attributes).toMatchObject({
      "gatehouse.agent_id": "a1", "gatehouse.agent": "calc", "gatehouse.state": "done",
      "gen_ai.usage.input_tokens": 30, "gen_ai.usage.output_tokens": 10,
    });
    for (const s of spans.filter((s) => s !== turn)) {
      expect(s.parentSpanContext?.spanId ?? (s as unknown as { parentSpanId?: string }).parentSpanId).toBe(turn.spanContext().spanId);
      expect(s.spanContext().traceId).toBe(turn.spanContext().traceId);
      expect(s.attributes).toMatchObject({ "gatehouse.agent_id": "a1", "gatehouse.turn_id": turnId });
    }
    expect(named("gatehouse.model_step").map((s) => [s.attributes["gatehouse.step"], s.attributes["gen_ai.usage.input_tokens"], s.attributes["gen_ai.usage.output_tokens"], s.attributes["gatehouse.tool_calls"]]))
      .toEqual([[1, 10, 4, 1], [2, 20, 6, 1]]);
    expect(named("gatehouse.tool_call")[0].attributes).toMatchObject({ "gatehouse.tool": "add", "gatehouse.tool_call_id": "c1", "gatehouse.tool_ok": true });
    expect(named("gatehouse.verification")[0].attributes).toMatchObject({ "gatehouse.verification_outcome": "passed" });

    // The info lines of the turn: its verification and its end (turn_end); no takeover, no refusal.
    const info = lines.filter((l) => l.level === "info");
    expect(info.map((l) => l.msg)).toEqual(["verification", "turn_end"]);
    expect(info[1].fields).toMatchObject({ agentId: "a1", agent: "calc", turnId, status: "done", steps: 2 });
    expect(info[0].fields).toMatchObject({ agentId: "a1", turnId, outcome: "passed", attempt: 1, state: "done" });
    // debug adds every claim and commit.
    expect(lines.filter((l) => l.msg === "claim")).toHaveLength(1);
    expect(lines.filter((l) => l.msg === "commit").length).toBeGreaterThanOrEqual(2);
    await gh.close();
  });

  it("GET /metrics counts the task, the turn, its steps and their latency", async () => {
    const gh = createGatehouse({ agents: [calc], clock: manualClock(), ids: seqIds() });
    await enqueue(gh, "a1", { agent: "calc", input: "2+3" });
    const before = parseExposition((await scrape(gh)).text).samples;
    expect(before.get('gatehouse_ready_agents{target="default"}')).toBe(1);
    await gh.drain();

    const res = await scrape(gh);
    expect(res.status).toBe(200);
    expect(res.type).toBe("text/plain; version=0.0.4; charset=utf-8");
    const { samples, types } = parseExposition(res.text);
    expect(types.get("gatehouse_tasks_enqueued_total")).toBe("counter");
    expect(types.get("gatehouse_ready_agents")).toBe("gauge");
    expect(types.get("gatehouse_step_duration_seconds")).toBe("histogram");
    expect(samples.get("gatehouse_tasks_enqueued_total")).toBe(1);
    expect(samples.get('gatehouse_turns_ended_total{status="done"}')).toBe(1);
    expect(samples.get('gatehouse_turns_ended_total{status="failed"}')).toBe(0);
    expect(samples.get("gatehouse_steps_total")).toBe(2);
    expect(samples.get("gatehouse_watchdog_timeouts_total")).toBe(0);
    expect(samples.get('gatehouse_ready_agents{target="default"}')).toBe(0);
    expect(samples.get("gatehouse_step_duration_seconds_count")).toBe(2);
    // The manual clock does not move during the steps: both fall in the first bucket.
    expect(samples.get('gatehouse_step_duration_seconds_bucket{le="0.05"}')).toBe(2);
    expect(samples.get('gatehouse_step_duration_seconds_bucket{le="+Inf"}')).toBe(2);
    expect(samples.get("gatehouse_step_duration_seconds_sum")).toBe(0);
    expect([...samples.keys()].some((k) => k.startsWith("gatehouse_commits_refused_total"))).toBe(false);

    // A duplicate task is not counted again.
    await enqueue(gh, "a1", { agent: "calc", input: "2+3", idempotencyKey: "k" });
    await enqueue(gh, "a1", { agent: "calc", input: "2+3", idempotencyKey: "k" });
    expect(parseExposition((await scrape(gh)).text).samples.get("gatehouse_tasks_enqueued_total")).toBe(2);
    expect(samples.get("gatehouse_turns_chained_total")).toBe(0);
    // Two tasks queued together: the commit that ends the first starts the second.
    await enqueue(gh, "a2", { agent: "calc", input: "1+1" });
    await enqueue(gh, "a2", { agent: "calc", input: "2+2" });
    await gh.drain();
    const after = parseExposition((await scrape(gh)).text);
    expect(after.types.get("gatehouse_turns_chained_total")).toBe("counter");
    expect(after.samples.get("gatehouse_turns_chained_total")).toBe(1);
    await gh.close();
  });

  it("counts watchdog timeouts and logs each one", async () => {
    const lines: Line[] = [];
    const clock = manualClock();
    const agent = defineAgent({
      name: "asker",
      instructions: "Ask.",
      model: scriptedModel(() => ({ toolCalls: [{ id: "q1", name: "ask_human", args: { q: "ok?" } }] })),
      tools: [askHuman],
    });
    const gh = createGatehouse({ agents: [agent], clock, ids: seqIds(), logger: captureLogger(lines), externalToolTimeoutMs: 1_000 });
    await enqueue(gh, "a1", { agent: "asker", input: "go" });
    await gh.drain();
    clock.advance(1_001);
    expect((await gh.tick()).timedOut).toBe(1);
    expect(parseExposition((await scrape(gh)).text).samples.get("gatehouse_watchdog_timeouts_total")).toBe(1);
    const line = lines.find((l) => l.msg === "watchdog_timeout");
    expect(line?.level).toBe("info");
    expect(line?.fields).toMatchObject({ agentId: "a1", toolCallId: "q1" });
    await gh.close();
  });

  it("counts refused commits by reason", async () => {
    const metrics = createMetrics();
    const store = meteredStore(memoryStore(), metrics);
    await store.enqueueTask({ agentId: "a1", agentName: "calc", workerTarget: "t", input: 1, options: {}, turnId: "turn_1", now: 1 });
    const c = await store.claim({ agentId: "a1", workerId: "w1", leaseMs: 1_000, now: 2 });
    if (c.status !== "claimed") throw new Error(c.status);
    const r = await store.commit({
      agentId: "a1", workerId: "w1", epoch: c.epoch + 1, expectedVersion: c.head.version, turnId: "turn_1",
      snapshot: null, state: "running", activeTurnId: "turn_1", events: [], messages: [], recordToolCalls: [],
      resolveToolCalls: [], ackMailThrough: 0, release: null, leaseMs: 1_000, now: 3,
    });
    expect(r).toEqual({ status: "conflict", reason: "fenced" });
    const { samples } = parseExposition(metrics.render(new Map()));
    expect(samples.get('gatehouse_commits_refused_total{reason="fenced"}')).toBe(1);
    expect(samples.get("gatehouse_tasks_enqueued_total")).toBe(1);
  });

  it("asks for a token when auth is configured", async () => {
    const token = "0123456789abcdef0123";
    const gh = createGatehouse({ agents: [calc], auth: { bearerTokens: [token] } });
    expect((await scrape(gh)).status).toBe(401);
    const ok = await scrape(gh, { authorization: `Bearer ${token}` });
    expect(ok.status).toBe(200);
    expect(parseExposition(ok.text).samples.get("gatehouse_tasks_enqueued_total")).toBe(0);
    await gh.close();
  });
});

describe("the lease in the agent view", () => {
  it("shows who holds the agent and until when, and null once released", async () => {
    const clock = manualClock();
    const gh = createGatehouse({ agents: [calc], clock, ids: seqIds(), leaseMs: 15_000 });
    await enqueue(gh, "a1", { agent: "calc", input: "2+3" });
    const queued = await get(gh, "/v1/agents/a1");
    expect(queued.json.lease).toBeNull();
    expect(queued.json.runnableAtMs).toBeNull(); // a queued task rings the bell; nothing is due without it

    const c = await gh.store.claimNext({ workerTarget: "default", workerId: "w_dead/0", leaseMs: 15_000, now: clock.now() });
    expect(c.status).toBe("claimed");
    const held = await get(gh, "/v1/agents/a1");
    expect(held.json.lease).toEqual({
      workerId: "w_dead/0",
      until: new Date(clock.now() + 15_000).toISOString(),
      untilMs: clock.now() + 15_000,
    });
    expect(held.json.runnableAtMs).toBe(clock.now()); // the turn is due: a worker must run it

    // The holder dies; after its lease the next worker takes over, says so, and finishes the turn.
    const lines: Line[] = [];
    const gh2 = createGatehouse({ agents: [calc], clock, store: gh.store, ids: seqIds(), logger: captureLogger(lines) });
    expect(await gh2.drain()).toBe(0);
    clock.advance(15_000 + 250);
    await gh2.drain();
    const takeover = lines.find((l) => l.msg === "lease_takeover");
    expect(takeover?.level).toBe("info");
    expect(takeover?.fields).toMatchObject({ agentId: "a1", previousWorker: "w_dead/0", waitedMs: 250, sinceLastWriteMs: 15_250 });
    const done = await get(gh, "/v1/agents/a1");
    expect(done.json.state).toBe("done");
    expect(done.json.lease).toBeNull();
    await gh2.close();
  });
});
