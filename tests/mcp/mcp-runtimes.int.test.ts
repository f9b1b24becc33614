/**
 * mcpTools() under Deno and Bun (Node is tests/mcp/mcp-tools.test.ts): the
 * stdio transport spawns the test server and the Streamable HTTP transport
 * reaches the HTTP one, from each runtime (tests/fixtures/mcp/client-check.ts).
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMcpServer, type TestMcpServer } from "../helpers/mcp-server.ts";

const root = new URL("../..", import.meta.url).pathname;
const RUNTIMES = [
  { runtime: "Deno", command: `${root}node_modules/.bin/deno`, args: ["run", "--allow-all", "tests/fixtures/mcp/client-check.ts"] },
  { runtime: "Bun", command: `${root}node_modules/.bin/bun`, args: ["tests/fixtures/mcp/client-check.ts"] },
];

let server: TestMcpServer;
beforeAll(async () => {
  server = await startMcpServer();
});
afterAll(async () => {
  await server?.stop();
});

function run(command: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, env: { ...process.env, NO_COLOR: "1", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

describe.each(RUNTIMES)("mcpTools() under $runtime", ({ command, args }) => {
  it("calls a tool over stdio and over Streamable HTTP", async () => {
    const r = await run(command, args, { MCP_URL: server.url, NODE_BIN: process.execPath });
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out.trim().split("\n").at(-1)!)).toEqual({ stdio: { ok: true, value: { sum: 3 } }, http: { ok: true, value: { sum: 7 } } });
  }, 120_000);
});
