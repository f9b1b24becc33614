/**
 * Deno entry: `deno run -A entry/deno.ts`. Same app, worker pool and
 * watchdog as the Node entry, served with Deno.serve.
 */
import { consoleLogger } from "../actors/runtime.ts";
import { demoAgents } from "../examples/demo.ts";
import { createGatehouse } from "../gatehouse.ts";
import { redisStore } from "../redis.ts";
import { authFromEnv } from "../mod.ts";
import { storeFromEnv } from "./store-from-env.ts";

const env = Deno.env.toObject();
const logger = consoleLogger((env.GATEHOUSE_LOG as "info") ?? "info");
const store = await storeFromEnv(env, {
  redis: redisStore,
  onError: (err) => logger.warn("redis connection error; reconnecting", { error: err.message }),
});
const gh = createGatehouse({ agents: demoAgents, store, logger, concurrency: Number(env.GATEHOUSE_CONCURRENCY ?? 4), auth: authFromEnv(env) });
gh.startWorker();
const server = Deno.serve({ port: Number(env.PORT ?? 8787), hostname: env.HOST ?? "127.0.0.1" }, gh.fetch);

for (const sig of ["SIGINT", "SIGTERM"] as const) {
  Deno.addSignalListener(sig, async () => {
    await server.shutdown();
    await gh.close();
    Deno.exit(0);
  });
}
