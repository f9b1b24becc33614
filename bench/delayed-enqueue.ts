/**
 * The cost of one enqueue with delayed tasks queued (store/port.ts
 * invariant `delayed-tasks`): on a private redis-server, per round, an
 * agent with none queued and one with QUEUED (default 3,000) delayed tasks
 * not yet due each take SAMPLES enqueues (alternating: an immediate task,
 * then a delayed one earlier than every queued one, the two cases a walk of
 * the list from its tail paid for each task it passed). Printed: the median
 * time of an enqueue at 0 and at QUEUED, their ratio (at QUEUED ÷ at 0: about
 * 1 when the cost does not grow with the queue), and Redis' SLOWLOG-free
 * figure, the commands run per enqueue (`INFO commandstats`). Written to
 * bench/results/delayed-enqueue.md.
 *
 *   npx tsx bench/delayed-enqueue.ts
 *
 * Options (environment): DELAYED_QUEUED (default 3000), DELAYED_SAMPLES (default 400).
 */
import process from "node:process";
import { writeFileSync } from "node:fs";
import { Redis } from "ioredis";
import { redisStore } from "../redis.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";

const QUEUED = Number(process.env.DELAYED_QUEUED ?? 3_000);
const SAMPLES = Number(process.env.DELAYED_SAMPLES ?? 400);
const T0 = Date.now();
const DAY = 86_400_000;

const server = await startRedisServer();
const raw = new Redis(server.url);
const store = redisStore({ url: server.url, prefix: "bdq" });
const base = (agentId: string) => ({ agentId, agentName: "bench", workerTarget: "default", input: "x", options: {} });

async function fill(agentId: string, n: number) {
  for (let i = 0; i < n; i++) await store.enqueueTask({ ...base(agentId), turnId: `${agentId}_q${i}`, now: T0, runAt: T0 + DAY + i });
}

async function commands(): Promise<number> {
  const info = await raw.info("commandstats");
  let n = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (m[1] !== "info" && m[1] !== "config") n += Number(m[2]);
  return n;
}

/** One enqueue into `agentId`: its time (ms) and the commands Redis ran for it. */
async function one(agentId: string, i: number): Promise<[number, number]> {
  await raw.config("RESETSTAT");
  const delayed = i % 2 === 1;
  const t = performance.now();
  await store.enqueueTask({ ...base(agentId), turnId: `${agentId}_p${i}`, now: T0 + 1, ...(delayed ? { runAt: T0 + 60_000 + i } : {}) });
  const ms = performance.now() - t;
  return [ms, await commands()];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

try {
  await fill("empty", 0);
  await fill("full", QUEUED);
  const at0: number[] = [], atN: number[] = [], cmd0: number[] = [], cmdN: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    // Alternating the two agents, so a busy moment of the machine falls on both alike.
    const [a, ca] = await one("empty", i);
    const [b, cb] = await one("full", i);
    at0.push(a); cmd0.push(ca); atN.push(b); cmdN.push(cb);
  }
  const m0 = median(at0), mN = median(atN);
  const ratio = mN / m0;
  const lines = [
    `# One enqueue with ${QUEUED} delayed tasks queued vs none (bench/delayed-enqueue.ts)`,
    "",
    `${new Date().toISOString()}, ${SAMPLES} enqueues each (half immediate, half delayed earlier than every queued task), private redis-server.`,
    "",
    "| queued delayed tasks | median enqueue (ms) | median commands per enqueue |",
    "| -------------------- | ------------------- | --------------------------- |",
    `| 0 | ${m0.toFixed(3)} | ${median(cmd0)} |`,
    `| ${QUEUED} | ${mN.toFixed(3)} | ${median(cmdN)} |`,
    "",
    `ratio (enqueue at ${QUEUED} ÷ enqueue at 0): ${ratio.toFixed(2)}`,
    "",
  ];
  process.stdout.write(lines.join("\n"));
  writeFileSync(new URL("./results/delayed-enqueue.md", import.meta.url), lines.join("\n"));
} finally {
  await store.close?.();
  raw.disconnect();
  await server.stop();
}
