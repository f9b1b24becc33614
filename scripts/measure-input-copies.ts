/**
 * How many times over a large task input is stored: runs one turn of an agent
 * (an in-process tool call, an external one, a final answer) with a 200 KB
 * input and sums the stored bytes that belong to the input, by location,
 * while the turn waits for the external tool and after it ended, on the
 * memory store and (with GATEHOUSE_REDIS_URL, or a redis-server on PATH) on
 * Redis.
 *
 *   npx tsx scripts/measure-input-copies.ts
 *
 * The input is one object with a 200 KB string of JSON-escaping characters
 * mixed in (quotes and backslashes grow when JSON is embedded in JSON, which
 * is what a message holding the input as text does). "Factor" = stored bytes
 * of all values that contain the input's marker, divided by the input's own
 * JSON size.
 */
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel } from "../mod.ts";
import { redisStore } from "../redis.ts";
import type { Store } from "../mod.ts";
import { memoryStoreState } from "../store/memory.ts";

const MARKER = "MARKER_0f3a";
const SIZE = 200 * 1024;

function bigInput() {
  const unit = 'quote " and backslash \\ and text; ';
  return { task: "summarise", doc: MARKER + unit.repeat(Math.ceil(SIZE / unit.length)).slice(0, SIZE) };
}

async function runTurn(store: Store, during: () => Promise<void>) {
  const crunch = defineTool({ name: "crunch", description: "Crunch", parameters: z.object({}), execute: async () => "crunched" });
  const ask = defineTool({ name: "ask", description: "Ask a human", parameters: z.object({}) });
  const agent = defineAgent({
    name: "reader",
    instructions: "Read it.",
    model: scriptedModel([{ toolCalls: [{ name: "crunch", args: {} }] }, { toolCalls: [{ name: "ask", args: {} }] }, { text: "done" }]),
    tools: [crunch, ask],
  });
  const gh = createGatehouse({ agents: [agent], store });
  const input = bigInput();
  const res = await gh.fetch(new Request("http://gh/v1/agents/m1/tasks", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ agent: "reader", input }),
  }));
  if (res.status !== 202) throw new Error(`enqueue: ${res.status} ${await res.text()}`);
  await gh.drain();
  await during();
  const events = await store.readEvents("m1", 0, 1_000);
  const call = events.find((e) => e.type === "tool_call" && e.data.name === "ask")!;
  const r = await gh.fetch(new Request("http://gh/v1/agents/m1/tool-results", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ turnId: call.turnId, toolCallId: call.data.toolCallId, outcome: { ok: true, value: "fine" } }),
  }));
  if (r.status !== 200) throw new Error(`tool result: ${r.status}`);
  await gh.drain();
  const head = await store.getAgent("m1");
  if (head?.state !== "done") throw new Error(`turn did not finish: ${head?.state}`);
  return new TextEncoder().encode(JSON.stringify(input)).byteLength;
}

const bytes = (s: string) => new TextEncoder().encode(s).byteLength;

/** Location -> bytes of stored values containing the marker. */
type Tally = Map<string, number>;
const add = (t: Tally, where: string, value: string) => {
  if (value.includes(MARKER)) t.set(where, (t.get(where) ?? 0) + bytes(value));
};

function tallyMemory(store: Store): Tally {
  const t: Tally = new Map();
  const state = memoryStoreState(store) as { agents: Array<[string, Record<string, unknown>]> };
  for (const [, a] of state.agents) {
    const head = a.head as Record<string, unknown>;
    for (const [k, v] of Object.entries(head)) add(t, `head.${k}`, JSON.stringify(v));
    for (const e of a.events as Array<{ type: string; data: { event?: { type?: string } } }>) {
      add(t, `event ${e.type}${e.data.event?.type ? ` (${e.data.event.type})` : ""}`, JSON.stringify(e));
    }
    for (const m of a.messages as Array<{ role: string }>) add(t, `message (${m.role})`, JSON.stringify(m));
    for (const task of a.tasks as unknown[]) add(t, "tasks", JSON.stringify(task));
    for (const [, rec] of a.toolCalls as Array<[string, unknown]>) add(t, "tool call records", JSON.stringify(rec));
    for (const [, input] of (a.inputs ?? []) as Array<[string, unknown]>) add(t, "inputs", JSON.stringify(input));
  }
  return t;
}

async function tallyRedis(url: string, prefix: string): Promise<Tally> {
  const { Redis } = await import("ioredis");
  const r = new Redis(url);
  const t: Tally = new Map();
  for (const key of await r.keys(`${prefix}:*`)) {
    const suffix = key.slice(key.lastIndexOf("}:") + 2).replace(/:.*/, "");
    const type = await r.type(key);
    if (type === "hash") {
      for (const [f, v] of Object.entries(await r.hgetall(key))) add(t, suffix === "head" ? `head.${f}` : suffix, v);
    } else if (type === "list") {
      for (const v of await r.lrange(key, 0, -1)) {
        let where = suffix;
        if (suffix === "events") {
          const e = JSON.parse(v);
          where = `events ${e.type}${e.data?.event?.type ? ` (${e.data.event.type})` : ""}`;
        }
        add(t, where, v);
      }
    } else if (type === "string") {
      // A long head value lives in `<head>:<field>` (store/lua/includes/head.lua).
      const long = key.slice(key.lastIndexOf("}:") + 2).match(/^head:(.+)$/);
      add(t, long ? `head.${long[1]}` : suffix, (await r.get(key)) ?? "");
    }
  }
  r.disconnect();
  return t;
}

function report(name: string, inputBytes: number, t: Tally) {
  const total = [...t.values()].reduce((a, b) => a + b, 0);
  console.log(`\n${name}: input ${inputBytes} bytes of JSON, stored ${total} bytes holding it: factor ${(total / inputBytes).toFixed(2)}`);
  for (const [where, n] of [...t].sort((a, b) => b[1] - a[1])) console.log(`  ${(n / inputBytes).toFixed(2)}x  ${where}`);
}

const mem = memoryStore();
let during: Tally = new Map();
const n = await runTurn(mem, async () => {
  during = tallyMemory(mem);
});
report("memory, while the turn waits for a tool", n, during);
report("memory, after the turn", n, tallyMemory(mem));

let url = process.env.GATEHOUSE_REDIS_URL;
let stop: (() => Promise<void>) | undefined;
if (!url) {
  try {
    const { startRedisServer } = await import("../tests/helpers/redis-server.ts");
    const server = await startRedisServer();
    url = server.url;
    stop = () => server.stop();
  } catch (err) {
    console.log(`\nredis: skipped (${String(err)})`);
  }
}
if (url) {
  const prefix = `measure_${Date.now()}`;
  const store = redisStore({ url, prefix });
  let mid: Tally = new Map();
  const n = await runTurn(store, async () => {
    mid = await tallyRedis(url!, prefix);
  });
  await store.close();
  report("redis, while the turn waits for a tool", n, mid);
  report("redis, after the turn", n, await tallyRedis(url, prefix));
}
await stop?.();
