/**
 * The README's curl session, run verbatim (only the port differs) against
 * `npm start`'s entry file. Node-only: it spawns processes.
 */
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const session = /<!-- readme-session:start -->\n```sh\n([\s\S]*?)```\n<!-- readme-session:end -->/.exec(readme)?.[1];

describe("README curl session", () => {
  let port = 0;
  let server: ReturnType<typeof spawn>;
  let log = "";

  beforeAll(async () => {
    port = await freePort();
    server = spawn(process.execPath, ["--import", "tsx", "entry/node.ts"], {
      cwd: new URL("..", import.meta.url).pathname,
      env: { ...process.env, PORT: String(port), GATEHOUSE_REDIS_URL: "", UPSTASH_REDIS_REST_URL: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    server.stdout!.on("data", (d) => (log += d));
    server.stderr!.on("data", (d) => (log += d));
    for (let i = 0; i < 100; i++) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
      } catch { /* not up yet */ }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`server did not start:\n${log}`);
  }, 20_000);

  afterAll(() => {
    server?.kill("SIGTERM");
  });

  it("drives a task through an external tool call to done, as the README shows", () => {
    expect(session, "README has the marked session block").toBeDefined();
    const script = session!.replaceAll("127.0.0.1:8787", `127.0.0.1:${port}`);
    const r = spawnSync("bash", ["-c", script], { encoding: "utf8", timeout: 20_000 });
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^\{"agentId":"alice","turnId":"turn_[0-9a-f]+","duplicate":false\}$/);
    expect(lines[1]).toMatch(/^"type":"tool_call","data":\{"step":2,"toolCallId":"call_turn_[0-9a-f]+_2_0","name":"approve_refund"$/);
    expect(lines[2]).toBe('"state":"waiting-tools"');
    expect(lines[3]).toBe('{"accepted":true,"duplicate":false}');
    expect(lines[4]).toBe('{"accepted":true,"duplicate":true}');
    expect(lines[5]).toBe('"state":"done"');
    expect(lines[6]).toBe('"output":{"orderId":"A-1001","refund":"approved","note":"approved by Dana"}');
    expect(lines).toHaveLength(7);
  }, 30_000);
});
