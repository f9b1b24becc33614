/**
 * Bounded storage, measured: one agent runs many turns of the benchmark
 * workload (bench/agent.ts: three model steps a turn) on a private Redis,
 * through createGatehouse() and the TCP adapter, once with retention on
 * (the defaults, store/retention.ts, and a memory policy of 10 turns) and
 * once with it off. At 1, 10, 100, 1 000 and 10 000 turns (and the last) it records:
 *
 * - bytes Redis holds for the agent: MEMORY USAGE (SAMPLES 0) of every key
 *   under its hash tag, found with SCAN, plus its share of nothing else
 *   (the shared indexes hold one member each);
 * - the read a worker does to resume it, timed (median of 200): the head,
 *   a page of its 100 latest events, and the conversation it needs for the
 *   next step (`readConversation`, from the summary on with a memory policy);
 * - commands and bytes per turn over the WINDOW (100) turns before the mark
 *   (`INFO commandstats`, `total_net_input_bytes`; only where no earlier
 *   mark's measuring falls into those turns).
 *
 *   npx tsx bench/retention.ts            # 10 000 turns on, 1 000 off
 *   BENCH_TURNS=2000 npx tsx bench/retention.ts
 *   BENCH_TURNS=2000 BENCH_WINDOW=1000 BENCH_OUT=retention-window.md npx tsx bench/retention.ts
 *
 * Writes bench/results/retention.md (BENCH_OUT) and prints it. Trimming
 * comes in batches (a cut every `checkpointEvery` events, then the turns it
 * frees), so a window of 1 000 turns gives the steady average per turn.
 */
import { writeFileSync } from "node:fs";
import { Redis } from "ioredis";
import { createGatehouse } from "../mod.ts";
import { redisStore } from "../redis.ts";
import type { Store } from "../store/port.ts";
import { DEFAULT_RETENTION } from "../store/retention.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { benchAgent } from "./agent.ts";
import { commandStats, diffStats } from "./redis-info.ts";

const TURNS = Number(process.env.BENCH_TURNS ?? 10_000);
const TURNS_OFF = Math.min(TURNS, Number(process.env.BENCH_TURNS_OFF ?? 1_000));
const MARKS = [1, 10, 100, 1_000, 10_000, 100_000];
/** Turns before a mark over which commands and bytes per turn are averaged. */
const WINDOW = Number(process.env.BENCH_WINDOW ?? 100);
const OUT = process.env.BENCH_OUT ?? "retention.md";

interface Mark {
  turns: number;
  bytes: number;
  keys: number;
  events: number;
  messages: number;
  readUs: number;
  readBytes: number;
  cmdsPerTurn: number | null;
  scriptsPerTurn: number | null;
  bytesInPerTurn: number | null;
  secondsSoFar: number;
}

async function agentBytes(info: Redis, prefix: string, agentId: string): Promise<{ bytes: number; keys: number }> {
  let bytes = 0;
  let keys = 0;
  let cursor = "0";
  do {
    const [next, found] = await info.scan(cursor, "MATCH", `${prefix}:{a:${agentId}}:*`, "COUNT", 1000);
    cursor = next;
    for (const k of found) {
      bytes += Number(await info.call("MEMORY", "USAGE", k, "SAMPLES", "0"));
      keys++;
    }
  } while (cursor !== "0");
  return { bytes, keys };
}

/** What a worker reads to resume the agent: head, the latest page of events, the conversation for the next step. */
async function timeRead(store: Store, agentId: string, fromSummary: boolean): Promise<{ us: number; bytes: number }> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 200; i++) {
    const t0 = performance.now();
    const head = (await store.getAgent(agentId))!;
    const page = await store.readEvents(agentId, Math.max(0, head.lastEventId - 100), 100);
    const conv = await store.readConversation(agentId, fromSummary ? { fromSummary } : undefined);
    times.push(performance.now() - t0);
    if (i === 0) bytes = JSON.stringify(head).length + JSON.stringify(page).length + JSON.stringify(conv).length;
  }
  times.sort((a, b) => a - b);
  return { us: Math.round(times[100] * 1000), bytes };
}

async function run(info: Redis, url: string, label: string, turns: number, on: boolean): Promise<Mark[]> {
  const prefix = `ret${on ? "on" : "off"}`;
  const agentId = "a1";
  const store = redisStore({ url, prefix });
  const { agent } = benchAgent(on ? { memory: { keepTurns: 10 } } : {});
  const gh = createGatehouse({ agents: [agent], store, concurrency: 1, ...(on ? {} : { retention: false }) });
  const marks: Mark[] = [];
  const started = performance.now();
  let windowStart = await commandStats(info);
  for (let t = 1; t <= turns; t++) {
    const isMark = (x: number) => MARKS.includes(x) || x === turns;
    if (isMark(t + WINDOW - 1)) windowStart = await commandStats(info);
    await store.enqueueTask({ agentId, agentName: "bench", workerTarget: "default", input: `task ${t}`, options: {}, turnId: `turn_${t}`, now: Date.now() });
    await gh.drain();
    if (!isMark(t)) continue;
    // Only a window without an earlier mark's measuring reads in it.
    const clean = t >= WINDOW && !MARKS.some((m) => m < t && m > t - WINDOW);
    const delta = clean ? diffStats(windowStart, await commandStats(info)) : null;
    const head = (await store.getAgent(agentId))!;
    const { bytes, keys } = await agentBytes(info, prefix, agentId);
    const read = await timeRead(store, agentId, on);
    const m: Mark = {
      turns: t, bytes, keys,
      events: head.lastEventId - head.eventsTrimmedThrough,
      messages: head.messageCount - head.messagesTrimmedThrough,
      readUs: read.us, readBytes: read.bytes,
      cmdsPerTurn: delta ? delta.totalCalls / WINDOW : null,
      scriptsPerTurn: delta ? delta.scriptCalls / WINDOW : null,
      bytesInPerTurn: delta ? delta.netInputBytes / WINDOW : null,
      secondsSoFar: (performance.now() - started) / 1000,
    };
    marks.push(m);
    console.error(`${label}: ${JSON.stringify(m)}`);
  }
  await gh.close();
  await store.close();
  return marks;
}

const n = (x: number | null, d = 0) => (x === null ? "—" : x.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }));

function table(title: string, marks: Mark[]): string {
  const rows = marks.map((m) =>
    `| ${n(m.turns)} | ${n(m.bytes)} | ${n(m.keys)} | ${n(m.events)} | ${n(m.messages)} | ${n(m.readUs)} | ${n(m.readBytes)} | ${n(m.cmdsPerTurn, 1)} | ${n(m.scriptsPerTurn, 2)} | ${n(m.bytesInPerTurn)} | ${n(m.secondsSoFar, 1)} |`
  );
  return [
    `### ${title}`,
    "",
    "| turns | bytes held | keys | events kept | messages kept | resume read µs (median) | resume read bytes | Redis cmds/turn | script calls/turn | bytes to Redis/turn | s so far |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ...rows,
    "",
  ].join("\n");
}

const server = await startRedisServer();
const info = new Redis(server.url);
try {
  const on = await run(info, server.url, "retention on", TURNS, true);
  const off = await run(info, server.url, "retention off", TURNS_OFF, false);
  const version = /redis_version:(\S+)/.exec(await info.info("server"))?.[1] ?? "?";
  const text = [
    "# Bounded storage: one agent, many turns",
    "",
    `\`npx tsx bench/retention.ts\`, ${new Date().toISOString().slice(0, 10)}, Node ${process.versions.node}, Redis ${version}, ` +
    "TCP adapter, one agent, the workload of bench/agent.ts (three model steps a turn), one turn after the other. " +
    `Commands and bytes per turn: averaged over the ${WINDOW} turns before each mark.`,
    "",
    `Retention on: the defaults (${JSON.stringify(DEFAULT_RETENTION)}) and \`memory: { keepTurns: 10 }\`. ` +
    "Off: `retention: false`, no memory policy.",
    "",
    table("Retention on", on),
    table("Retention off", off),
  ].join("\n");
  writeFileSync(new URL(`./results/${OUT}`, import.meta.url), text);
  console.log(text);
} finally {
  info.disconnect();
  await server.stop();
}
