/**
 * What concurrency keys cost: `npx tsx bench/concurrency-keys.ts`.
 *
 * Steps/s of the throughput run (bench/throughput.ts `runGatehouse`, TCP
 * Redis, a private redis-server) in three configurations, alternated
 * `BENCH_REPEAT` times (default 3; each repetition starts with the next
 * configuration), medians reported:
 * - `no keys`: tasks without a key (every bell in the default lane);
 * - `keys`: every agent's tasks carry one of 10 keys (`tenant:<i mod 10>`),
 *   no limits: ten lanes rotated by `claimNext`, each lease recorded;
 * - `keys + limits`: the same with limits that never bind (`"*": 10000`),
 *   so every claim also counts its key's running set.
 * The ratio keys ÷ no keys is the cost (store/port.ts invariants
 * `concurrency-keys`, `fair-lanes`; goal: at least 0.95).
 *
 * Then Redis commands per claim (INFO commandstats: the script call plus the
 * commands inside it), for `claimNext` on 200 agents due, without and with
 * keys and limits.
 *
 * Turn ids (`BENCH_TURN_IDS`): `runtime` (default) shapes them like the
 * runtime's (`turn_` + 16 hex digits, bench/throughput.ts `runtimeTurnId`);
 * `short` keeps throughput.ts' `turn_<t>_<i>`. With the short ids a keyless
 * task's stored text stays just under Redis' 64-byte compact hash value
 * (store/lua/includes/head.lua, long values), and the key alone pushes it
 * over (a GET per turn end and per chained claim, a SET per claim): a cost
 * every task with a runtime id pays with or without a key, not one of keys.
 *
 * Prints a table and writes bench/results/concurrency-keys.md.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import process from "node:process";
import { Redis } from "ioredis";
import { redisStore } from "../redis.ts";
import type { ConcurrencyLimits, Store } from "../store/port.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { commandStats, diffStats } from "./redis-info.ts";
import { enqueueAll, type GhResult, runGatehouse, runtimeTurnId } from "./throughput.ts";

const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);
const KEYS = 10;
const keyOf = (i: number) => `tenant:${i % KEYS}`;
const LOOSE: ConcurrencyLimits = { "*": 10_000 };
const TURN_IDS = process.env.BENCH_TURN_IDS === "short" ? "short" : "runtime";
const turnIdOf = TURN_IDS === "runtime" ? runtimeTurnId : undefined;

type Variant = "no keys" | "keys" | "keys + limits";
const VARIANTS: Variant[] = ["no keys", "keys", "keys + limits"];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Redis commands per claimNext over `n` due agents (keyed with limits, or not). */
async function commandsPerClaim(url: string, info: Redis, keyed: boolean, n = 200): Promise<{ commands: number; scripts: number }> {
  const store: Store = redisStore({ url, prefix: `cpc${keyed ? "k" : "n"}` });
  await enqueueAll(store, "c", n, 1, keyed ? keyOf : undefined, turnIdOf);
  const before = await commandStats(info);
  let claimed = 0;
  for (let i = 0; i < n; i++) {
    const c = await store.claimNext({ workerTarget: "default", workerId: "w", leaseMs: 30_000, now: Date.now(), ...(keyed ? { concurrencyLimits: LOOSE } : {}) });
    if (c.status === "claimed") claimed++;
  }
  const d = diffStats(before, await commandStats(info));
  await store.close();
  if (claimed !== n) throw new Error(`expected ${n} claims, got ${claimed}`);
  return { commands: d.totalCalls / n, scripts: d.scriptCalls / n };
}

async function main() {
  const redis = await startRedisServer();
  const info = new Redis(redis.url);
  try {
    const runs: Record<Variant, GhResult[]> = { "no keys": [], keys: [], "keys + limits": [] };
    for (let rep = 0; rep < REPEAT; rep++) {
      // Each repetition starts with another configuration, so none is always first (nor last) on a growing Redis.
      for (const v of VARIANTS.map((_, j) => VARIANTS[(j + rep) % VARIANTS.length])) {
        const r = await runGatehouse({
          adapter: "tcp", concurrency: CONCURRENCY, info, rep: rep * 10 + VARIANTS.indexOf(v), turnIdOf,
          makeStore: (prefix) => redisStore({ url: redis.url, prefix }),
          ...(v === "no keys" ? {} : { concurrencyKeys: { keyOf, ...(v === "keys + limits" ? { limits: LOOSE } : {}) } }),
        });
        runs[v].push(r);
        console.log(`${v} rep ${rep}: ${r.stepsPerSecond.toFixed(0)} steps/s, ${r.redisCommandsPerStep.toFixed(1)} Redis commands/step, ${r.redisCpuUsPerStep.toFixed(0)} Redis CPU µs/step, ${r.nodeCpuUsPerStep.toFixed(0)} worker CPU µs/step`);
      }
    }
    const base = median(runs["no keys"].map((r) => r.stepsPerSecond));
    const rows = VARIANTS.map((v) => {
      const sps = runs[v].map((r) => r.stepsPerSecond);
      const m = median(sps);
      const cmds = median(runs[v].map((r) => r.redisCommandsPerStep));
      const redisUs = median(runs[v].map((r) => r.redisCpuUsPerStep));
      const nodeUs = median(runs[v].map((r) => r.nodeCpuUsPerStep));
      return `| ${v} | ${m.toFixed(0)} (${Math.min(...sps).toFixed(0)}–${Math.max(...sps).toFixed(0)}) | ${(m / base).toFixed(3)} | ${cmds.toFixed(1)} | ${redisUs.toFixed(0)} | ${nodeUs.toFixed(0)} |`;
    });
    // Commands per step by name, keys + limits against no keys (mean over the runs; the ones that differ).
    const meanOf = (v: Variant) => {
      const m = new Map<string, number>();
      for (const r of runs[v]) for (const [k, n] of Object.entries(r.commandsPerStep)) m.set(k, (m.get(k) ?? 0) + n / runs[v].length);
      return m;
    };
    const [none, limited] = [meanOf("no keys"), meanOf("keys + limits")];
    const diff = [...new Set([...none.keys(), ...limited.keys()])]
      .map((k) => [k, (limited.get(k) ?? 0) - (none.get(k) ?? 0)] as const)
      .filter(([, d]) => Math.abs(d) >= 0.005).sort((a, b) => b[1] - a[1])
      .map(([k, d]) => `${k.toUpperCase()} ${d > 0 ? "+" : ""}${d.toFixed(2)}`).join(", ");
    const plain = await commandsPerClaim(redis.url, info, false);
    const keyed = await commandsPerClaim(redis.url, info, true);
    const md = [
      "# Concurrency keys: cost (bench/concurrency-keys.ts)",
      "",
      `TCP Redis (private redis-server), ${CONCURRENCY} worker loops, instant model, ${REPEAT} alternated runs per configuration (median, range);`,
      `${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? "?"}), Node ${process.version}. Keys: ${KEYS} (\`tenant:<i mod ${KEYS}>\`); limits \`{"*": 10000}\` (never binding);`,
      `turn ids: ${TURN_IDS === "runtime" ? "shaped like the runtime's (`turn_` + 16 hex digits)" : "short (`turn_<t>_<i>`)"}; load average at the end ${os.loadavg().map((l) => l.toFixed(1)).join(" / ")}.`,
      "",
      "| configuration | steps/s | ÷ no keys | Redis commands/step | Redis CPU µs/step | worker CPU µs/step |",
      "| --- | --- | --- | --- | --- | --- |",
      ...rows,
      "",
      `Redis commands per step by name, keys + limits − no keys: ${diff}.`,
      "",
      "Redis commands per `claimNext` (INFO commandstats: script call + commands inside), 200 due agents claimed one by one:",
      "",
      "| configuration | commands/claim | script calls/claim |",
      "| --- | --- | --- |",
      `| no keys | ${plain.commands.toFixed(1)} | ${plain.scripts.toFixed(1)} |`,
      `| keys + limits | ${keyed.commands.toFixed(1)} | ${keyed.scripts.toFixed(1)} |`,
      "",
    ].join("\n");
    console.log(md);
    mkdirSync(new URL("./results/", import.meta.url), { recursive: true });
    writeFileSync(new URL("./results/concurrency-keys.md", import.meta.url), md);
  } finally {
    info.disconnect();
    await redis.stop();
  }
}

await main();
