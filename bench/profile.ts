/**
 * The TCP / 100-agent case of the benchmark alone, for CPU profiling and quick
 * before/after comparisons of worker CPU per step:
 *
 *   npx tsx bench/profile.ts                      # 3 runs, prints µs/step and steps/s
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile.ts
 *
 * Same workload as `npm run bench` (bench/agent.ts, 400 agents × 5 turns at
 * concurrency 100, lease 30 s); a private redis-server on a free port. Options
 * (environment): PROFILE_RUNS (default 3), PROFILE_CONCURRENCY (default 100),
 * PROFILE_DIR (a directory: writes a CPU profile of each measured window
 * there, without the process's start and the warm-up that `--cpu-prof` also
 * records), PROFILE_CALLGRIND=1 (under `valgrind --tool=callgrind
 * --instr-atstart=no`: instruments the measured windows only, through
 * `callgrind_control -i on|off`, so the instruction count of the windows is
 * a figure that the load of a shared machine does not move):
 *
 *   PROFILE_RUNS=1 PROFILE_CALLGRIND=1 PROFILE_LEASE_MS=3600000 valgrind --tool=callgrind --instr-atstart=no \
 *     --callgrind-out-file=/tmp/cg.%p node --import tsx bench/profile.ts
 *   callgrind_annotate /tmp/cg.<pid> | head   # "PROGRAM TOTALS": instructions of the windows
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { performance } from "node:perf_hooks";
import process from "node:process";
import { createGatehouse } from "../mod.ts";
import type { Store } from "../store/port.ts";
import { redisStore } from "../redis.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { benchAgent, STEPS_PER_TURN } from "./agent.ts";
import { countingStore } from "./counting-store.ts";

const RUNS = Math.max(1, Number(process.env.PROFILE_RUNS ?? 3));
const CONCURRENCY = Math.max(1, Number(process.env.PROFILE_CONCURRENCY ?? 100));
const TURNS_PER_AGENT = 5;
const TURNS = 2000;
const PROFILE_DIR = process.env.PROFILE_DIR;
/** PROFILE_LEASE_MS: the lease (default 30 s). Under valgrind a run is ~50x slower: a long lease keeps renewals out of the count. */
const LEASE_MS = Math.max(1_000, Number(process.env.PROFILE_LEASE_MS ?? 30_000));
/** Turns callgrind's instrumentation on or off for this process (PROFILE_CALLGRIND=1 only). */
const callgrind = (on: boolean) => {
  if (process.env.PROFILE_CALLGRIND === "1") execFileSync("callgrind_control", ["-i", on ? "on" : "off", String(process.pid)], { stdio: "ignore" });
};

async function enqueueAll(store: Store, prefix: string, agents: number, turnsPerAgent: number): Promise<void> {
  const ids = Array.from({ length: agents }, (_, i) => `${prefix}-a${i}`);
  for (let t = 0; t < turnsPerAgent; t++) {
    await Promise.all(ids.map((agentId, i) =>
      store.enqueueTask({
        agentId, agentName: "bench", workerTarget: "default", input: `task ${t} of agent ${i}`, options: {},
        turnId: `turn_${t}_${i}`, now: Date.now(),
      })
    ));
  }
}

async function main() {
  const redis = await startRedisServer();
  try {
    const results: Array<{ us: number; sps: number }> = [];
    for (let rep = 0; rep < RUNS; rep++) {
      const prefix = `p${rep}`;
      const counted = countingStore(redisStore({ url: redis.url, prefix }));
      const { agent, modelSteps } = benchAgent();
      const gh = createGatehouse({ agents: [agent], store: counted.store, concurrency: CONCURRENCY, leaseMs: LEASE_MS, pollMs: 100 });
      await enqueueAll(counted.store, `${prefix}w`, CONCURRENCY, 1);
      gh.startWorker();
      await counted.whenTurnsEnded(CONCURRENCY);
      await gh.stopWorker();

      await enqueueAll(counted.store, prefix, TURNS / TURNS_PER_AGENT, TURNS_PER_AGENT);
      counted.reset();
      const session = PROFILE_DIR ? new Session() : undefined;
      if (session) {
        session.connect();
        await session.post("Profiler.enable");
        await session.post("Profiler.start");
      }
      callgrind(true);
      const s0 = modelSteps();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      gh.startWorker();
      await counted.whenTurnsEnded(TURNS);
      const seconds = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const steps = modelSteps() - s0;
      callgrind(false);
      if (session) {
        const { profile } = await session.post("Profiler.stop");
        writeFileSync(`${PROFILE_DIR}/window-${rep + 1}.cpuprofile`, JSON.stringify(profile));
        session.disconnect();
      }
      await gh.stopWorker();
      await counted.store.close();
      if (steps !== TURNS * STEPS_PER_TURN) throw new Error(`expected ${TURNS * STEPS_PER_TURN} steps, counted ${steps}`);
      const r = { us: (cpu.user + cpu.system) / steps, sps: steps / seconds };
      results.push(r);
      console.log(`run ${rep + 1}: ${r.sps.toFixed(0)} steps/s, ${r.us.toFixed(0)} µs worker CPU/step (user ${(cpu.user / steps).toFixed(0)}, system ${(cpu.system / steps).toFixed(0)})`);
    }
    const us = results.map((r) => r.us).sort((a, b) => a - b);
    const sps = results.map((r) => r.sps).sort((a, b) => a - b);
    const mid = Math.floor((RUNS - 1) / 2);
    console.log(`median: ${sps[mid].toFixed(0)} steps/s, ${us[mid].toFixed(0)} µs/step (range ${us[0].toFixed(0)}–${us[RUNS - 1].toFixed(0)})`);
  } finally {
    await redis.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
