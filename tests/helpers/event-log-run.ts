/**
 * The run behind the event-log fixture (tests/fixtures/event-log-v1/,
 * tests/store/event-log-migration.int.test.ts): one agent, a fixed clock, two turns.
 * Turn 1: a step with streamed text (over 512 characters, so several `chunk`
 * events) and two calls (an in-process tool, an external one), the external
 * result posted over HTTP, then a final answer with text. Turn 2: one
 * in-process call, then `submit_result`. What `readings` gathers is what
 * the HTTP readers serve of it: the agent, the JSON event pages, the SSE
 * stream, the history at every event and the replay bundle.
 */
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import type { Gatehouse, Store } from "../../mod.ts";

export const T0 = 1_700_000_000_000;
export const AGENT_ID = "log1";
/** The clock when `runFixture` returns. */
export const RUN_END = T0 + 2_000;
const LONG = "Let me look this up. ".repeat(40) + "I will crunch the numbers and ask a human.";

export function fixtureAgent() {
  const crunch = defineTool({
    name: "crunch", description: "Crunch numbers", parameters: z.object({ n: z.number(), note: z.string() }),
    execute: async ({ n, note }) => ({ total: n * 2, note, items: [1, 2, 3].map((i) => ({ i, label: `item ${i}` })) }),
  });
  const ask = defineTool({ name: "ask_human", description: "Ask a human", parameters: z.object({ q: z.string() }) });
  return defineAgent({
    name: "logger",
    instructions: "Crunch, ask, answer.",
    model: scriptedModel((c) => {
      const first = c.messages.filter((m) => m.role === "user").length === 1;
      if (first) {
        if (c.step === 1) {
          return {
            text: LONG,
            toolCalls: [
              { name: "crunch", args: { n: 21, note: "the quarterly figures, with a long note to repeat" } },
              { name: "ask_human", args: { q: "Is a total of 42 plausible for this quarter?" } },
            ],
            usage: { inputTokens: 120, outputTokens: 40 },
            cost: 0.002,
          };
        }
        return { text: "The total is 42, and a human agreed. Done.", usage: { inputTokens: 200, outputTokens: 12 }, cost: 0.001 };
      }
      if (c.step === 1) return { toolCalls: [{ name: "crunch", args: { n: 5, note: "second turn" } }], usage: { inputTokens: 50, outputTokens: 5 } };
      return { toolCalls: [{ name: "submit_result", args: { result: "ten" } }], usage: { inputTokens: 60, outputTokens: 6 } };
    }),
    tools: [crunch, ask],
  });
}

/** `turnsBefore`: turns the store holds already (turn ids go on from there). */
export function fixtureGatehouse(store: Store, turnsBefore = 0): { gh: Gatehouse; clock: { t: number; now(): number } } {
  const clock = { t: T0, now: () => clock.t };
  // Fixed ids and clock: two runs write the same log.
  let turns = turnsBefore;
  const ids = { turnId: () => `turn_${++turns}`, workerId: () => "w1" };
  const gh = createGatehouse({ agents: [fixtureAgent()], store, clock, ids, sse: { pollMs: 5 } });
  return { gh, clock };
}

export async function call(gh: Gatehouse, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await gh.fetch(new Request(`http://gh.test${path}`, {
    method,
    headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  }));
  return { status: res.status, body: await res.json() as any };
}

/** Runs both turns on `store`. */
export async function runFixture(gh: Gatehouse, clock: { t: number }): Promise<void> {
  const enq = await call(gh, "POST", `/v1/agents/${AGENT_ID}/tasks`, { agent: "logger", input: { ask: "quarterly total" } });
  if (enq.status !== 202) throw new Error(`enqueue: ${enq.status} ${JSON.stringify(enq.body)}`);
  await gh.drain();
  clock.t += 1_000;
  const page = await call(gh, "GET", `/v1/agents/${AGENT_ID}/events?limit=500`);
  const tc = page.body.events.find((e: any) => e.type === "tool_call" && e.data.external === true);
  const r = await call(gh, "POST", `/v1/agents/${AGENT_ID}/tool-results`, { turnId: tc.turnId, toolCallId: tc.data.toolCallId, outcome: { ok: true, value: "plausible" } });
  if (r.status !== 200) throw new Error(`tool result: ${r.status} ${JSON.stringify(r.body)}`);
  await gh.drain();
  clock.t += 1_000;
  await call(gh, "POST", `/v1/agents/${AGENT_ID}/tasks`, { agent: "logger", input: { ask: "second" } });
  await gh.drain();
  const head = await gh.store.getAgent(AGENT_ID);
  if (head?.state !== "done") throw new Error(`run did not finish: ${head?.state}`);
}

/** The SSE stream from event 0, read in pages of `limit`, until the last event; only the `id`/`event`/`data` lines. */
async function sse(gh: Gatehouse, lastEventId: number, limit: number): Promise<string[]> {
  const ac = new AbortController();
  const res = await gh.fetch(new Request(`http://gh.test/v1/agents/${AGENT_ID}/events?format=sse&limit=${limit}`, { signal: ac.signal }));
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let text = "";
  while (!text.includes(`id: ${lastEventId}\n`)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value, { stream: true });
  }
  ac.abort();
  await reader.cancel().catch(() => {});
  return text.split("\n").filter((l) => /^(id|event|data): /.test(l));
}

export interface Readings {
  agent: unknown;
  pages: unknown[];
  sse: string[];
  history: Record<string, unknown>;
  bundle: unknown;
}

/** What the HTTP readers serve of the agent's log. */
export async function readings(gh: Gatehouse): Promise<Readings> {
  const head = (await gh.store.getAgent(AGENT_ID))!;
  const agent = (await call(gh, "GET", `/v1/agents/${AGENT_ID}`)).body;
  const pages: unknown[] = [(await call(gh, "GET", `/v1/agents/${AGENT_ID}/events?limit=500`)).body];
  // Small pages: a page may end anywhere in a commit.
  for (let after = 0; after < head.lastEventId; after += 3) pages.push((await call(gh, "GET", `/v1/agents/${AGENT_ID}/events?limit=3&after=${after}`)).body);
  const history: Record<string, unknown> = {};
  for (let id = 1; id <= head.lastEventId; id++) history[id] = (await call(gh, "GET", `/v1/agents/${AGENT_ID}/history/${id}`)).body;
  const bundle = (await call(gh, "GET", `/v1/agents/${AGENT_ID}/export`)).body;
  return { agent, pages, sse: await sse(gh, head.lastEventId, 4), history, bundle };
}
