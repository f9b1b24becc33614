/**
 * Bun entry: `bun entry/bun.ts`. Same app, worker pool and watchdog as the
 * Node and Deno entries, served with Bun.serve; shuts down cleanly on
 * SIGINT/SIGTERM (the server stops taking requests, in-flight claims finish
 * or are fenced, then the store closes).
 *
 * Environment (the same as entry/node.ts and entry/deno.ts): PORT (default
 * 8787), HOST (default 127.0.0.1), GATEHOUSE_CONCURRENCY (default 4),
 * GATEHOUSE_LOG (debug|info|warn|error), plus the store selection of
 * entry/store-from-env.ts.
 *
 * Type-checked with Bun's own types by `tsc -p tsconfig.bun.json` (the main
 * tsconfig leaves this file out, as it leaves entry/deno.ts to Deno).
 */
import { consoleLogger } from "../actors/runtime.ts";
import { demoAgents } from "../examples/demo.ts";
import { createGatehouse } from "../gatehouse.ts";
import { redisStore } from "../redis.ts";
import { authFromEnv } from "../mod.ts";
import { storeFromEnv } from "./store-from-env.ts";

const env = Bun.env;
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
// idleTimeout 0: an SSE stream (GET /v1/agents/:id/events) writes its
// keep-alive comment every 15 s, past Bun's default 10 s idle limit, which
// would otherwise cut it.
const server = Bun.serve({ port, hostname, idleTimeout: 0, fetch: gh.fetch });
logger.info("gatehouse listening", { url: `http://${hostname}:${server.port}`, store: store.kind });

let closing = false;
async function shutdown(signal: string) {
  if (closing) return;
  closing = true;
  logger.info("shutting down", { signal });
  // Like the Node entry: stop accepting, let open requests finish, and close
  // the pool and the store without waiting for open SSE streams.
  void server.stop();
  await gh.close();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
