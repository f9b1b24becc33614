/**
 * A worker process consuming one single-consumer target, for
 * tests/pool/single-consumer.int.test.ts: `createGatehouse` on a Redis store with
 * one agent on `GH_SVC1_TARGET`, its worker id set to `GH_SVC1_NAME`, and
 * `startWorker()` until it is killed. Each model step RPUSHes
 * `{ worker, agentId, at }` to `GH_SVC1_SIDE_KEY` (on the same Redis) before
 * answering, so the test sees which process ran which turn and when.
 *
 * Prints `{ "ready": true }` once the loops run. SIGTERM stops the worker
 * (releasing the target) and exits 0.
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
  const name = env("GH_SVC1_NAME");
  const url = env("GH_SVC1_REDIS_URL");
  const side = new Redis(url);
  const agent = defineAgent({
    name: "svc",
    instructions: "x",
    workerTarget: env("GH_SVC1_TARGET"),
    model: scriptedModel(async (ctx) => {
      await side.rpush(env("GH_SVC1_SIDE_KEY"), JSON.stringify({ worker: name, agentId: ctx.agentId, at: Date.now() }));
      return { text: "done" };
    }),
  });
  const gh = createGatehouse({
    agents: [agent],
    store: redisStore({ url, prefix: env("GH_SVC1_PREFIX") }),
    ids: { turnId: randomIds.turnId, workerId: () => name },
    leaseMs: Number(env("GH_SVC1_LEASE_MS")),
    pollMs: 20,
    concurrency: 2,
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
  process.stderr.write(`svc1-process failed: ${(err as Error)?.stack ?? err}\n`);
  process.exit(1);
});
