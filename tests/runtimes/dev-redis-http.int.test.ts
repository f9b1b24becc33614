/**
 * `gatehouse dev-redis-http` (entry/dev-redis-http.ts, entry/upstash-rest.ts):
 * the command, run as users run it, serves the Upstash REST protocol in front
 * of a real redis-server; a gatehouse using the Upstash store pointed at it
 * (UPSTASH_REDIS_REST_URL/TOKEN, as a Worker's .dev.vars would give) runs the
 * README's curl session, and the agent's records are in that Redis. Its
 * failed starts are one line with the exit codes of STARTUP_EXIT_CODES, and
 * a request without the token is refused.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/redis-server.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { expectSessionOutput, runBashAsync, sessionParts } from "../helpers/readme-session.ts";

const root = new URL("../..", import.meta.url).pathname;
const children: ChildProcess[] = [];

function start(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ["--import", "tsx", ...args], {
    cwd: root,
    env: { ...process.env, GATEHOUSE_REDIS_URL: "", UPSTASH_REDIS_REST_URL: "", UPSTASH_REDIS_REST_TOKEN: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<number | null>((res) => child.on("exit", (code) => res(code)));
  return { child, exited, out: () => out, err: () => err };
}

async function until(what: () => boolean, label: string, log: () => string) {
  for (let i = 0; i < 300 && !what(); i++) await new Promise((r) => setTimeout(r, 100));
  expect(what(), `${label}:\n${log()}`).toBe(true);
}

const redis = useRedisServer({}, 30_000);
afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
});

describe("gatehouse dev-redis-http", () => {
  it("serves Upstash REST in front of redis-server; a gatehouse on upstashStore runs the README session against it", async () => {
    const port = await freePort();
    const bridge = start(["entry/cli.ts", "dev-redis-http", "--port", String(port), "--redis", redis.url, "--token", "local-secret"]);
    await until(() => bridge.out().includes("UPSTASH_REDIS_REST_TOKEN="), "dev-redis-http did not start", bridge.err);
    expect(bridge.out().split("\n")).toEqual([
      `dev-redis-http: Upstash REST on http://127.0.0.1:${port} -> redis://${new URL(redis.url).host} (development only)`,
      `UPSTASH_REDIS_REST_URL=http://127.0.0.1:${port}`,
      "UPSTASH_REDIS_REST_TOKEN=local-secret",
      "",
    ]);

    // The protocol as @upstash/redis speaks it, and the token.
    const url = `http://127.0.0.1:${port}`;
    const post = (path: string, body: unknown, token = "local-secret") =>
      fetch(`${url}${path}`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
    expect(await (await post("/", ["SET", "greeting", "hi"])).json()).toEqual({ result: "OK" });
    expect(await (await post("/pipeline", [["GET", "greeting"], ["INCR", "n"]])).json()).toEqual([{ result: "hi" }, { result: 1 }]);
    expect(await (await post("/multi-exec", [["INCR", "n"], ["GET", "n"]])).json()).toEqual([{ result: 2 }, { result: "2" }]);
    const refused = await post("/", ["GET", "greeting"], "wrong");
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: "Unauthorized" });

    const gport = await freePort();
    const gh = start(["entry/node.ts"], { PORT: String(gport), UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: "local-secret" });
    await until(() => gh.out().includes("gatehouse listening"), "gatehouse did not start", () => gh.out() + gh.err());
    expect(gh.out()).toContain('"store":"upstash"');
    const [a, b] = sessionParts(gport);
    expectSessionOutput([...(await runBashAsync(a)), ...(await runBashAsync(b))]);

    // The agent lives in the redis-server behind the command.
    const direct = new Redis(redis.url);
    try {
      const keys = await direct.keys("*alice*");
      expect(keys.length).toBeGreaterThan(0);
    } finally {
      direct.disconnect();
    }
    gh.child.kill("SIGTERM");
    bridge.child.kill("SIGTERM");
    expect(await bridge.exited).toBe(0);
  }, 90_000);

  it("a Redis that cannot be reached: one line, exit code 4", async () => {
    const dead = await freePort();
    const r = start(["entry/cli.ts", "dev-redis-http", "--port", "0", "--redis", `redis://127.0.0.1:${dead}`]);
    expect(await r.exited).toBe(4);
    expect(r.err().trimEnd().split("\n")).toEqual([
      `gatehouse: cannot start: dev-redis-http: cannot reach redis at redis://127.0.0.1:${dead}: connect ECONNREFUSED 127.0.0.1:${dead}`,
    ]);
    expect(r.out()).toBe("");
  }, 30_000);

  it("a port in use: exit code 5; an unknown argument: exit code 2", async () => {
    const blocker = createServer();
    const port = await new Promise<number>((res) => blocker.listen(0, "127.0.0.1", () => res((blocker.address() as { port: number }).port)));
    try {
      const r = start(["entry/cli.ts", "dev-redis-http", "--port", String(port), "--redis", redis.url]);
      expect(await r.exited).toBe(5);
      expect(r.err().trimEnd()).toBe(`gatehouse: cannot start: dev-redis-http: port ${port} on 127.0.0.1 is already in use (EADDRINUSE); pass --port`);
    } finally {
      blocker.close();
    }
    const bad = start(["entry/cli.ts", "dev-redis-http", "--prot", "1"]);
    expect(await bad.exited).toBe(2);
    expect(bad.err()).toMatch(/^gatehouse: cannot start: dev-redis-http: unknown argument "--prot"/);
  }, 30_000);
});
