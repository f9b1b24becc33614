/**
 * An every-second schedule flood on one agent and the wait of another
 * agent's task: `npx tsx bench/schedule-flood.ts`.
 *
 * One gatehouse process (`startWorker()`, default settings) on TCP Redis (a
 * private redis-server). Agent `f1`'s turn waits for an external tool's
 * result, so every task a tick enqueues stays in its queue. Rows:
 * - `no flood`: no schedules;
 * - `flood`: `FLOOD_SCHEDULES` (default 100, the default bound) schedules
 *   `cron: "* * * * * *"` on `f1`.
 * In each row, for `FLOOD_SECONDS` (default 15), a task of a fresh agent is
 * posted every 250 ms with `Prefer: wait=30`; its latency is the request's
 * time until the answer with the turn's end. Printed: p50 / p95 / max of
 * that latency, the ratio of `flood` to `no flood` (same run, same
 * machine), `f1`'s queue at the end, and the ticks coalesced. Writes
 * bench/results/schedule-flood.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import process from "node:process";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../mod.ts";
import { redisStore } from "../redis.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";

const SCHEDULES = Number(process.env.FLOOD_SCHEDULES ?? 100);
const SECONDS = Number(process.env.FLOOD_SECONDS ?? 15);

interface Row {
  row: string;
  samples: number;
  p50: number;
  p95: number;
  max: number;
  queue: number;
  coalesced: number;
}

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function measure(url: string, row: string, schedules: number): Promise<Row> {
  const store = redisStore({ url, prefix: `flood-${row.replace(/\W/g, "")}` });
  const wait = defineTool({ name: "wait", description: "Waits for an answer from outside", parameters: z.object({}) });
  const flood = defineAgent({ name: "flood", instructions: "", model: scriptedModel(() => ({ toolCalls: [{ name: "wait", args: {} }] })), tools: [wait] });
  const other = defineAgent({ name: "other", instructions: "", model: scriptedModel(() => ({ text: "ok" })) });
  const gh = createGatehouse({ agents: [flood, other], store });
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    gh.fetch(new Request(`http://bench${path}`, {
      method, headers: { "content-type": "application/json", ...headers }, body: body === undefined ? undefined : JSON.stringify(body),
    }));
  gh.startWorker();
  await call("POST", "/v1/agents/f1/tasks", { agent: "flood", input: "go" });
  for (let i = 0; i < schedules; i++) {
    const r = await call("PUT", `/v1/agents/f1/schedules/s${i}`, { agent: "flood", input: "tick", cron: "* * * * * *" });
    if (r.status !== 201) throw new Error(`schedule ${i}: ${r.status} ${await r.text()}`);
  }
  const latencies: number[] = [];
  const pending: Promise<void>[] = [];
  const end = Date.now() + SECONDS * 1_000;
  for (let i = 0; Date.now() < end; i++) {
    pending.push((async () => {
      const t = performance.now();
      const r = await call("POST", `/v1/agents/o${i}/tasks`, { agent: "other", input: "hi" }, { prefer: "wait=30" });
      const body = await r.json() as { status?: string };
      if (r.status === 200 && body.status === "done") latencies.push(performance.now() - t);
    })());
    await new Promise((r) => setTimeout(r, 250));
  }
  await Promise.all(pending);
  const queue = (await store.getAgent("f1"))?.pendingTasks ?? 0;
  const metrics = await (await call("GET", "/metrics")).text();
  const coalesced = Number(/gatehouse_schedule_ticks_coalesced_total (\d+)/.exec(metrics)?.[1] ?? 0);
  await gh.close();
  latencies.sort((a, b) => a - b);
  return { row, samples: latencies.length, p50: pct(latencies, 50), p95: pct(latencies, 95), max: latencies[latencies.length - 1], queue, coalesced };
}

const redis = await startRedisServer();
try {
  const rows = [await measure(redis.url, "no flood", 0), await measure(redis.url, `flood (${SCHEDULES} schedules)`, SCHEDULES)];
  const ms = (n: number) => `${n.toFixed(1)} ms`;
  const lines = [
    `# Schedule flood: another agent's task latency (TCP Redis, ${SECONDS} s per row)`,
    "",
    `${new Date().toISOString()}, ${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(2)}; \`npx tsx bench/schedule-flood.ts\``,
    "",
    "| row | samples | p50 | p95 | max | f1 queue at end | ticks coalesced |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((r) => `| ${r.row} | ${r.samples} | ${ms(r.p50)} | ${ms(r.p95)} | ${ms(r.max)} | ${r.queue} | ${r.coalesced} |`),
    "",
    `p50 ratio flood / no flood: ${(rows[1].p50 / rows[0].p50).toFixed(2)}; p95 ratio: ${(rows[1].p95 / rows[0].p95).toFixed(2)}`,
    "",
  ];
  const text = lines.join("\n");
  console.log(text);
  mkdirSync(new URL("./results/", import.meta.url), { recursive: true });
  writeFileSync(new URL("./results/schedule-flood.md", import.meta.url), text);
} finally {
  await redis.stop();
}
