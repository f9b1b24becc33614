/**
 * The README's scenario through a typed client: `hc<GatehouseApp>` from
 * `hono/client` types each call's params and body and each JSON answer, so
 * `turnId`, `state` and the events below are typed, not parsed by hand.
 *
 *   npm start                                    # in one terminal
 *   npx tsx examples/client.ts http://127.0.0.1:8787
 *
 * Each run takes a fresh agent id and idempotency key, so it can follow the
 * README's curl session (which used `alice` and `req-1`) on the same server.
 *
 * tests/routes/routes-typed.test.ts runs `runScenario` against a gatehouse serving
 * the demo agents.
 */
import { hc } from "hono/client";
import type { GatehouseApp } from "../mod.ts";

export interface ScenarioResult {
  turnId: string;
  waitingState: string;
  /** Each delivery's answer, with the contract check of the result (docs/contracts.md). */
  deliveries: Array<{ accepted: true; duplicate: boolean; contract: { passed: boolean; mismatch: string | null } }>;
  finalState: string;
  output: unknown;
}

/** Asks `read` until `done` holds for its answer (every 50 ms, at most `tries` times); `explain` says what was seen instead. */
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, what: string, explain: (last: T) => string, tries = 200): Promise<T> {
  let last!: T;
  for (let i = 0; i < tries; i++) {
    last = await read();
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`Cannot finish the scenario: ${what} did not happen within ${tries * 50} ms; ${explain(last)}`);
}

/** A fresh suffix for agent ids and idempotency keys. */
const fresh = () => crypto.randomUUID().slice(0, 8);

/**
 * Runs the scenario against `baseUrl`: a task for a fresh agent
 * (`alice-<random>` unless `agentId` is given), the external approval call
 * found in the events, its result delivered twice (the second is a
 * duplicate), and the output once the agent is done. An error says what the
 * agent did instead when a step cannot happen (a reused agent id, a
 * duplicate idempotency key, a server without the demo agents).
 *
 * @example
 * const r = await runScenario("http://127.0.0.1:8787");
 * console.log(r.finalState, r.output); // done { orderId: "A-1001", refund: "approved", ... }
 */
export async function runScenario(baseUrl: string, fetchImpl?: typeof fetch, agentId = `alice-${fresh()}`): Promise<ScenarioResult> {
  const api = hc<GatehouseApp>(baseUrl, fetchImpl ? { fetch: fetchImpl } : {});
  const agent = api.v1.agents[":agentId"];
  const param = { agentId };

  const enqueued = await agent.tasks.$post({
    param,
    json: { agent: "concierge", input: "Refund order A-1001 please", idempotencyKey: `req-${fresh()}` },
  });
  if (enqueued.status !== 202) {
    const problem = await enqueued.text();
    throw new Error(`Cannot enqueue the task for ${agentId}: ${enqueued.status} ${problem} (does the server serve the demo agents? \`npm start\`)`);
  }
  const { turnId } = await enqueued.json();
  const view = async () => await (await agent.$get({ param })).json();
  const seen = (a: Awaited<ReturnType<typeof view>>) =>
    `agent ${agentId} is in state "${a.state}"${a.turnId && a.turnId !== turnId ? ` on turn ${a.turnId}, not ${turnId}` : ""}`;

  // The events route answers a JSON page or (text/event-stream) a stream; `format: "json"` asks for the page.
  const readPage = async () => {
    const body = await (await agent.events.$get({ param, query: { after: 0, format: "json" } })).json();
    if (typeof body !== "object" || body === null || !("events" in body)) throw new Error("Cannot read the events as a JSON page");
    return body;
  };
  // Events are a union discriminated on `type`: narrowing on it types `data`.
  type PageEvent = Awaited<ReturnType<typeof readPage>>["events"][number];
  const isApproval = (e: PageEvent): e is Extract<PageEvent, { type: "tool_call" }> =>
    e.type === "tool_call" && e.data.name === "approve_refund";
  const page = await until(readPage, (p) => p.events.some(isApproval), "the approve_refund call",
    (p) => `${p.events.length} events were logged, none an approve_refund call (last: ${p.events.at(-1)?.type ?? "none"})`);
  const call = page.events.find(isApproval)!;
  const toolCallId = call.data.toolCallId;

  const waiting = await until(view, (a) => a.state === "waiting-tools", "waiting-tools", seen);

  const deliveries: ScenarioResult["deliveries"] = [];
  for (let i = 0; i < 2; i++) {
    const res = await agent["tool-results"].$post({
      param,
      json: { turnId, toolCallId, outcome: { ok: true, value: "approved by Dana" } },
    });
    if (res.status !== 200) throw new Error(`Cannot deliver the tool result: ${res.status}`);
    deliveries.push(await res.json());
  }

  const done = await until(view, (a) => a.state === "done", "done", seen);
  return { turnId, waitingState: waiting.state, deliveries, finalState: done.state, output: done.output };
}

if (typeof process !== "undefined" && import.meta.url === `file://${process.argv[1]}`) {
  const r = await runScenario(process.argv[2] ?? "http://127.0.0.1:8787");
  console.log(JSON.stringify(r, null, 2));
}
