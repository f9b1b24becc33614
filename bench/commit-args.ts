/**
 * Worker CPU of building one commit's script arguments (store/lua-store.ts),
 * without Redis: the commits of one turn of the benchmark agent
 * (bench/agent.ts) are recorded from a real run, then replayed many times
 * into the script store over a runner that only answers `applied`.
 *
 *   npx tsx bench/commit-args.ts            # µs per commit, small and large values (best and median of 5 runs)
 *
 * "large": the same commits with a 16 KB string in each tool call's
 * arguments and each result, the case where encoding a value once per
 * commit (common/json-once.ts) rather than once per place matters.
 * Options (environment): COMMIT_ARGS_ROUNDS (default 5 000).
 */
import { performance } from "node:perf_hooks";
import process from "node:process";
import { createGatehouse } from "../mod.ts";
import { memoryStore } from "../store/memory.ts";
import type { CommitRequest, Store } from "../store/port.ts";
import { keySpace } from "../store/keys.ts";
import { scriptStore } from "../store/lua-store.ts";
import { benchAgent } from "./agent.ts";
import { countingStore } from "./counting-store.ts";

const ROUNDS = Math.max(1, Number(process.env.COMMIT_ARGS_ROUNDS ?? 5_000));

/** The commit requests of one turn, cloned as they were sent (structuredClone keeps shared objects shared). */
async function recordTurn(): Promise<CommitRequest[]> {
  const inner = memoryStore();
  const seen: CommitRequest[] = [];
  const commit = inner.commit.bind(inner);
  inner.commit = (req) => {
    seen.push(structuredClone(req));
    return commit(req);
  };
  const counted = countingStore(inner as Store);
  const { agent } = benchAgent();
  const gh = createGatehouse({ agents: [agent], store: counted.store, concurrency: 1, leaseMs: 30_000, pollMs: 100 });
  await counted.store.enqueueTask({ agentId: "a1", agentName: "bench", workerTarget: "default", input: "task", options: {}, turnId: "t1", now: Date.now() });
  gh.startWorker();
  await counted.whenTurnsEnded(1);
  await gh.stopWorker();
  return seen;
}

/** The same commits with every tool call's arguments and every result grown by `bytes` (in place: shared stays shared). */
function grown(reqs: CommitRequest[], bytes: number): CommitRequest[] {
  const out = structuredClone(reqs);
  const big = "x".repeat(bytes);
  const seen = new Set<object>();
  const grow = (o: unknown) => {
    if (o && typeof o === "object" && !seen.has(o)) {
      seen.add(o);
      (o as Record<string, unknown>).blob = big;
    }
  };
  for (const r of out) {
    for (const c of r.recordToolCalls) grow(c.args);
    for (const c of r.resolveToolCalls) grow((c.outcome as { value?: unknown }).value);
  }
  return out;
}

async function main() {
  const turn = await recordTurn();
  const store = scriptStore({
    kind: "redis",
    keys: keySpace("bench"),
    run: () => Promise.resolve('applied {"version":1,"lastEventId":1,"messagesTrimmedThrough":0}'),
    checkEviction: () => Promise.resolve({ policy: "noeviction" }),
    close: () => Promise.resolve(),
  });
  for (const [name, reqs] of [["small", turn], ["large", grown(turn, 16_384)]] as const) {
    for (let i = 0; i < 2000; i++) for (const r of reqs) await store.commit(r);
    const runs: number[] = [];
    for (let rep = 0; rep < 5; rep++) {
      const t0 = performance.now();
      for (let i = 0; i < ROUNDS; i++) for (const r of reqs) await store.commit(r);
      runs.push(((performance.now() - t0) * 1000) / (ROUNDS * reqs.length));
    }
    runs.sort((a, b) => a - b);
    console.log(`${name}: ${runs[0].toFixed(2)} µs per commit at best, median ${runs[2].toFixed(2)} (5 runs of ${ROUNDS} turns, ${reqs.length} commits each)`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
