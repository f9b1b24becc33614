/**
 * Takeover time after a crash, by lease: `npm run bench:takeover`.
 *
 * For each lease, `TAKEOVER_RUNS` times: two worker processes on a private
 * redis-server, a task whose first tool call runs for half a lease, SIGKILL
 * of the worker running it at a random point of its renewal period (0 to
 * leaseMs / 3 after the call started), and the time from the kill to the
 * other worker's `lease_takeover` claim (tests/helpers/takeover.ts).
 *
 * Prints a table and writes bench/results/takeover.json and
 * bench/results/takeover.md. `TAKEOVER_LEASES=1000,5000` and
 * `TAKEOVER_RUNS=n` override the defaults. The default lease
 * (DEFAULT_LEASE_MS in gatehouse.ts) is chosen from these figures; see
 * docs/operations.md, "Leases and takeover".
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { measureTakeover, type TakeoverRun } from "../tests/helpers/takeover.ts";

const leases = (process.env.TAKEOVER_LEASES ?? "1000,3000,5000,15000,30000").split(",").map(Number);
const defaultRuns = (lease: number) => (lease >= 30_000 ? 2 : lease >= 15_000 ? 3 : 5);
const POLL_MS = 100;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1) + 0.5))];
};

const redis = await startRedisServer();
const rows: Array<{ leaseMs: number; runs: number; minMs: number; medianMs: number; maxMs: number; renewalsPerAgentPerMin: number; samples: number[] }> = [];
const all: TakeoverRun[] = [];
try {
  for (const leaseMs of leases) {
    const n = Number(process.env.TAKEOVER_RUNS ?? defaultRuns(leaseMs));
    const samples: number[] = [];
    for (let i = 0; i < n; i++) {
      const killAfterMs = Math.floor(Math.random() * (leaseMs / 3));
      const run = await measureTakeover({
        redisUrl: redis.url, leaseMs, pollMs: POLL_MS, killAfterMs, toolMs: Math.max(300, Math.floor(leaseMs / 2)),
        label: `l${leaseMs}_${i}`,
      });
      samples.push(run.takeoverMs);
      all.push(run);
      console.log(`lease ${leaseMs} ms run ${i + 1}/${n}: killed ${killAfterMs} ms into the call, taken over after ${run.takeoverMs} ms (waited ${run.line.waitedMs} ms past the dead lease)`);
    }
    rows.push({
      leaseMs, runs: n, minMs: Math.min(...samples), medianMs: pct(samples, 0.5), maxMs: Math.max(...samples),
      renewalsPerAgentPerMin: Math.round((60_000 / Math.max(50, Math.floor(leaseMs / 3))) * 10) / 10, samples,
    });
  }
} finally {
  await redis.stop();
}

const table = [
  "| leaseMs | runs | takeover min (ms) | median (ms) | max (ms) | renewals per running agent per minute |",
  "| --- | --- | --- | --- | --- | --- |",
  ...rows.map((r) => `| ${r.leaseMs} | ${r.runs} | ${r.minMs} | ${r.medianMs} | ${r.maxMs} | ${r.renewalsPerAgentPerMin} |`),
].join("\n");
console.log(`\n${table}\n`);

const dir = fileURLToPath(new URL("./results/", import.meta.url));
mkdirSync(dir, { recursive: true });
const when = new Date().toISOString();
const machine = `${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, Node ${process.version}`;
writeFileSync(`${dir}takeover.json`, JSON.stringify({ when, machine, pollMs: POLL_MS, rows, runs: all.map((r) => ({ leaseMs: r.leaseMs, takeoverMs: r.takeoverMs, waitedMs: r.line.waitedMs, sinceLastWriteMs: r.line.sinceLastWriteMs })) }, null, 2) + "\n");
writeFileSync(
  `${dir}takeover.md`,
  `# Takeover after a killed worker\n\n${when}, ${machine}, pollMs ${POLL_MS}. Time from SIGKILL of the worker ` +
    `running a turn (at a random point of its renewal period) to the claim of the agent by the other worker ` +
    `(\`npm run bench:takeover\`, bench/takeover.ts).\n\n${table}\n`,
);
console.log(`wrote ${dir}takeover.json and takeover.md`);
