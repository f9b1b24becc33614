/**
 * examples/workers, deployed the way docs/workers.md says: built by wrangler
 * itself (`wrangler deploy --dry-run --outdir`, so wrangler's own bundling and
 * wrangler.toml are what is tested), then run in workerd (Miniflare, on a
 * loopback port) against a real Redis behind the Upstash bridge, and driven
 * by the README's curl session, verbatim but for the port. Also: the bearer
 * token comes from a secret binding.
 *
 * Node only: it runs wrangler, redis-server, the bridge and workerd.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/redis-server.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { expectSessionOutput, runBashAsync, sessionParts } from "../helpers/readme-session.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";
import { startWorker } from "../workerd/harness.ts";

const root = new URL("../..", import.meta.url).pathname;
const T = 90_000;

const redis = useRedisServer({}, T);
let bridge: UpstashBridge;
let script: string;
let out: string;
beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), "gatehouse-wrangler-"));
  const r = spawnSync(join(root, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", out], {
    cwd: join(root, "examples/workers"),
    encoding: "utf8",
    timeout: 80_000,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", WRANGLER_LOG_PATH: join(out, "logs"), NO_COLOR: "1", CI: "1" },
  });
  if (r.status !== 0) throw new Error(`wrangler deploy --dry-run failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  console.log(r.stdout.split("\n").filter((l) => /Total Upload/.test(l)).join("\n"));
  script = readFileSync(join(out, "worker.js"), "utf8");
  bridge = await startUpstashBridge({ redisUrl: redis.url });
}, T);
afterAll(async () => {
  await bridge?.close();
  if (out) rmSync(out, { recursive: true, force: true });
});

describe("examples/workers built by wrangler, in workerd", () => {
  // The bridge runs in this process, so the session runs in a child shell without blocking it.
  it("serves the README curl session: task -> external call pending -> result -> done", async () => {
    const port = await freePort();
    const w = await startWorker({ script }, {
      port,
      bindings: { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token },
    });
    try {
      const [a, b] = sessionParts(port);
      expectSessionOutput([...(await runBashAsync(a)), ...(await runBashAsync(b))]);
    } finally {
      await w.dispose();
    }
  }, T);

  it("takes its bearer token from the GATEHOUSE_TOKEN secret", async () => {
    const w = await startWorker({ script }, {
      bindings: { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token, GATEHOUSE_TOKEN: "example-token-0123456789" },
    });
    try {
      const body = { agent: "concierge", input: "Refund order A-1002" };
      const anon = await w.fetch("/v1/agents/tok1/tasks", { method: "POST", json: body });
      expect(anon.status).toBe(401);
      expect(anon.headers.get("content-type")).toContain("application/problem+json");
      const ok = await w.fetch("/v1/agents/tok1/tasks", { method: "POST", json: body, headers: { authorization: "Bearer example-token-0123456789" } });
      expect(ok.status).toBe(202);
      expect((await w.fetch("/healthz")).status).toBe(200);
    } finally {
      await w.dispose();
    }
  }, T);
});
