/**
 * The README's curl session, run verbatim (only the port differs) against
 * each runtime's entry file — Node (`npm start`'s entry/node.ts through tsx),
 * Bun (entry/bun.ts) and Deno (entry/deno.ts), with the binaries the npm dev
 * dependencies install — on the memory store, and on Redis
 * (GATEHOUSE_REDIS_URL) with the Redis server killed and restarted in the
 * middle of the session, which must lose nothing. A runtime that cannot start
 * fails its tests (nothing is skipped). Node-only: it spawns processes.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, it } from "vitest";
import { freePort } from "../helpers/redis-server.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { expectSessionOutput, runBash, sessionParts as parts } from "../helpers/readme-session.ts";

const root = new URL("../..", import.meta.url).pathname;

/** How each runtime starts its entry file, from the repository root. */
const RUNTIMES = [
  { runtime: "Node", command: process.execPath, args: ["--import", "tsx", "entry/node.ts"] },
  { runtime: "Bun", command: `${root}node_modules/.bin/bun`, args: ["entry/bun.ts"] },
  { runtime: "Deno", command: `${root}node_modules/.bin/deno`, args: ["run", "--allow-all", "entry/deno.ts"] },
] as const;
type Runtime = (typeof RUNTIMES)[number];

async function startServer(rt: Runtime, env: Record<string, string>) {
  const port = await freePort();
  let log = "";
  const child = spawn(rt.command, [...rt.args], {
    cwd: root,
    env: { ...process.env, GATEHOUSE_REDIS_URL: "", UPSTASH_REDIS_REST_URL: "", ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout!.on("data", (d) => (log += d));
  child.stderr!.on("data", (d) => (log += d));
  child.on("error", (err) => (log += `cannot start ${rt.command}: ${err.message}\n`));
  for (let i = 0; i < 150; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return { port, child, log: () => log };
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  throw new Error(`${rt.runtime} server did not start:\n${log}`);
}

for (const rt of RUNTIMES) describe(`README curl session under ${rt.runtime}`, () => {
  describe("on the memory store", () => {
    let server: { port: number; child: ChildProcess };
    beforeAll(async () => {
      server = await startServer(rt, {});
    }, 30_000);
    afterAll(() => {
      server?.child.kill("SIGTERM");
    });

    it("drives a task through an external tool call to done, as the README shows", () => {
      const [a, b] = parts(server.port);
      expectSessionOutput([...runBash(a), ...runBash(b)]);
    }, 40_000);
  });

  describe("with GATEHOUSE_REDIS_URL, Redis restarted mid-session", () => {
    const redis = useRedisServer({ appendonly: true, appendfsync: "always" }, 30_000);
    let server: { port: number; child: ChildProcess; log: () => string };
    beforeAll(async () => {
      server = await startServer(rt, { GATEHOUSE_REDIS_URL: redis.url });
    }, 30_000);
    afterAll(async () => {
      server?.child.kill("SIGTERM");
    });

    it("serves the same session, and a Redis crash + restart between the steps loses nothing", async () => {
      const [a, b] = parts(server.port);
      const first = runBash(a);
      // The task and the external call were acknowledged; now Redis crashes and comes back from its AOF.
      await redis.kill("SIGKILL");
      await redis.start();
      // Give the server's client a moment to reconnect; the session itself has no retries.
      for (let i = 0; i < 50; i++) {
        const r = await fetch(`http://127.0.0.1:${server.port}/v1/agents/alice`).catch(() => null);
        if (r?.ok) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      const second = runBash(b);
      expectSessionOutput([...first, ...second]);
    }, 60_000);
  });
});
