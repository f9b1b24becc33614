/**
 * Node entry: `npm start`. Serves the Hono app with @hono/node-server, runs
 * the worker pool and the watchdog loop in the same process, and shuts down
 * cleanly on SIGINT/SIGTERM (in-flight claims finish or are fenced; nothing
 * acknowledged is lost either way).
 *
 * Environment: PORT (default 8787), HOST (default 127.0.0.1),
 * GATEHOUSE_CONCURRENCY (default 4), GATEHOUSE_LOG (debug|info|warn|error),
 * plus the store selection of entry/store-from-env.ts and the auth of
 * routes/auth/from-env.ts.
 */
import { consoleLogger } from "../actors/runtime.ts";
import { demoAgents } from "../examples/demo.ts";
import { createGatehouse } from "../gatehouse.ts";
import { redisStore } from "../redis.ts";
import { createNodeServer } from "./node-server.ts";
import { authFromEnv } from "../mod.ts";
import { storeFromEnv } from "./store-from-env.ts";

const env = process.env;
const port = Number(env.PORT ?? 8787);
const hostname = env.HOST ?? "127.0.0.1";
const logger = consoleLogger((env.GATEHOUSE_LOG as "info") ?? "info");

const store = await storeFromEnv(env, {
  redis: redisStore,
  onError: (err) => logger.warn("redis connection error; reconnecting", { error: err.message }),
});
const gh = createGatehouse({
  agents: demoAgents,
  store,
  logger,
  concurrency: Number(env.GATEHOUSE_CONCURRENCY ?? 4),
  auth: authFromEnv(env),
});
gh.startWorker();
const server = createNodeServer(gh.app.fetch, logger);
server.listen(port, hostname, () => {
  const info = server.address() as { port: number };
  logger.info("gatehouse listening", { url: `http://${hostname}:${info.port}`, store: store.kind });
});

let closing = false;
async function shutdown(signal: string) {
  if (closing) return;
  closing = true;
  logger.info("shutting down", { signal });
  server.close();
  await gh.close();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
