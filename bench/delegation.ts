/**
 * What a delegation costs, on Redis (TCP) with a running worker pool:
 * `npx tsx bench/delegation.ts` (not part of `npm run bench`).
 *
 * Two workloads of N tasks each, same model, concurrency 4:
 * - `plain`: an agent whose turn is `work` (an in-process tool), then `submit_result`;
 * - `delegated`: a parent whose turn is a call of an agent tool, then
 *   `submit_result`; the child's turn is one `submit_result`.
 * Printed: wall time and store calls per task (all port methods, by method),
 * counted by bench/counting-store.ts (one store call is one Lua script call).
 */
import { z } from "zod";
import { redisStore } from "../redis.ts";
import { agentTool, createGatehouse, defineAgent, defineTool, scriptedModel } from "../mod.ts";
import type { AnyAgent } from "../mod.ts";
import { countingStore } from "./counting-store.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";

const N = Number(process.env.N ?? 200);

const work = defineTool({ name: "work", description: "Work", parameters: z.object({}), execute: () => "ok" });
const plain = defineAgent({
  name: "plain", instructions: "Work.", tools: [work],
  model: scriptedModel([{ toolCalls: [{ name: "work", args: {} }] }, { toolCalls: [{ name: "submit_result", args: { result: "done" } }] }]),
});
const child = defineAgent({
  name: "child", instructions: "Answer.", model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: "child done" } }] }]),
});
const parent = defineAgent({
  name: "parent", instructions: "Delegate.", tools: [agentTool(child)],
  model: scriptedModel([{ toolCalls: [{ name: "child", args: { input: "x" } }] }, { toolCalls: [{ name: "submit_result", args: { result: "done" } }] }]),
});

async function run(url: string, agent: AnyAgent, turnsPerTask: number) {
  const counting = countingStore(redisStore({ url, prefix: `bd_${agent.name}_${Date.now().toString(36)}` }));
  const gh = createGatehouse({ agents: [agent], store: counting.store, concurrency: 4, pollMs: 20, leaseMs: 30_000 });
  for (let i = 0; i < N; i++) {
    await gh.store.enqueueTask({ agentId: `${agent.name}-${i}`, agentName: agent.name, workerTarget: "default", input: "go", options: {}, turnId: `turn_${i}`, now: Date.now() });
  }
  counting.reset();
  const t0 = performance.now();
  const ended = counting.whenTurnsEnded(N * turnsPerTask);
  gh.startWorker();
  await ended;
  const ms = performance.now() - t0;
  await gh.close();
  const perTask: Record<string, number> = {};
  let total = 0;
  for (const [k, v] of Object.entries(counting.counts.calls)) {
    if (k === "nextReadyAt" || k === "claimNext") continue; // idle polling, not per task
    perTask[k] = Math.round((v / N) * 100) / 100;
    total += v;
  }
  return { ms: Math.round(ms), tasksPerSec: Math.round((N / ms) * 1000), storeCallsPerTask: Math.round((total / N) * 100) / 100, perTask, claims: Math.round(((counting.counts.answers["claimNext:claimed"] ?? 0) / N) * 100) / 100 };
}

const redis = await startRedisServer();
try {
  console.log(JSON.stringify({ N, plain: await run(redis.url, plain, 1), delegated: await run(redis.url, parent, 2) }, null, 1));
} finally {
  await redis.stop();
}
