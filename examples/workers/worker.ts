/**
 * gatehouse on Cloudflare Workers: the example agents of `npm start`
 * (examples/demo.ts) behind `fetch`, with the watchdog and the drain of due
 * agents on a cron trigger (`scheduled`), on Upstash Redis.
 *
 * Secrets (`wrangler secret put NAME`; never in wrangler.toml):
 * - UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN: the Upstash database;
 * - GATEHOUSE_TOKEN / GATEHOUSE_TOKENS, GATEHOUSE_WEBHOOK_SECRETS,
 *   QSTASH_CURRENT_SIGNING_KEY + QSTASH_NEXT_SIGNING_KEY (optional): auth,
 *   read by authFromEnv (routes/auth/from-env.ts, docs/security.md); any of
 *   them set turns auth on for every route but /healthz and /readyz.
 *
 * In a project that installed gatehouse, import from "@gatehouse-runtime/core" instead.
 */
import { authFromEnv, createWorkersHandler, upstashStore } from "../../mod.ts";
import { demoAgents } from "../demo.ts";

interface Env {
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
  GATEHOUSE_TOKEN?: string;
  GATEHOUSE_TOKENS?: string;
  GATEHOUSE_WEBHOOK_SECRETS?: string;
  QSTASH_CURRENT_SIGNING_KEY?: string;
  QSTASH_NEXT_SIGNING_KEY?: string;
}

export default createWorkersHandler<Env>({
  agents: demoAgents,
  store: (env) => upstashStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }),
  auth: (env) => authFromEnv({ ...env }),
  // What a request may drive in ctx.waitUntil, and what one cron run may drive (docs/runtimes.md).
  driveBudget: { steps: 10, ms: 20_000 },
  scheduledDriveBudget: { steps: 20, ms: 20_000 },
});
