/**
 * A worker process for tests/pool/fair-lanes.int.test.ts: `createGatehouse`
 * on a Redis store with one agent (`lane`) and `concurrencyLimits` from
 * `GH_LANE_LIMITS` (JSON; the sharded layout with `GH_LANE_SHARDS` homes when set), its worker id `GH_LANE_NAME`, `startWorker()`
 * until it is killed. Each model step RPUSHes `{ worker, agentId, start, end }`
 * to `GH_LANE_SIDE_KEY` after waiting `GH_LANE_TURN_MS`; with `GH_LANE_HANG=1`
 * the model never answers (the process holds its claims until it dies).
 *
 * Prints `{ "ready": true }` once the loops run. SIGTERM stops it and exits 0.
 */
import process from "node:process";
import { Redis } from "ioredis";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";
import { randomIds } from "../../actors/runtime.ts";
import { redisStore } from "../../redis.ts";

const env = (k: string) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};

async function main() {
  const name = env("GH_LANE_NAME");
  const url = env("GH_LANE_REDIS_URL");
  const side = new Redis(url);
  const turnMs = Number(env("GH_LANE_TURN_MS"));
  const hang = process.env.GH_LANE_HANG === "1";
  const agent = defineAgent({
    name: "lane",
    instructions: "x",
    model: scriptedModel(async (ctx) => {
      const start = Date.now();
      if (hang) await new Promise(() => {});
      await new Promise((r) => setTimeout(r, turnMs));
      await side.rpush(env("GH_LANE_SIDE_KEY"), JSON.stringify({ worker: name, agentId: ctx.agentId, start, end: Date.now() }));
      return { text: "done" };
    }),
  });
  const gh = createGatehouse({
    agents: [agent],
    store: redisStore({ url, prefix: env("GH_LANE_PREFIX"), ...(process.env.GH_LANE_SHARDS ? { shards: Number(process.env.GH_LANE_SHARDS) } : {}) }),
    ids: { turnId: randomIds.turnId, workerId: () => name },
    leaseMs: Number(env("GH_LANE_LEASE_MS")),
    concurrencyLimits: JSON.parse(env("GH_LANE_LIMITS")) as Record<string, number>,
    pollMs: 20,
    concurrency: Number(env("GH_LANE_LOOPS")),
  });
  process.on("SIGTERM", () => {
    gh.close().finally(() => {
      side.disconnect();
      process.exit(0);
    });
  });
  gh.startWorker();
  process.stdout.write(JSON.stringify({ ready: true, worker: name, pid: process.pid }) + "\n");
}

main().catch((err) => {
  process.stderr.write(`lane-process failed: ${(err as Error)?.stack ?? err}\n`);
  process.exit(1);
});
