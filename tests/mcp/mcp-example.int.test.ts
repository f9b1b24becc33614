/**
 * The "MCP tools" example of docs/mcp.md: the block between the `mcp-example`
 * markers is examples/mcp.ts, and it runs (under tsx, as docs/mcp.md says)
 * against examples/mcp-server.ts, a real MCP server of the official SDK,
 * printing `done {"sum":5}`.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/redis-server.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
let server: ChildProcess | undefined;
afterAll(() => {
  server?.kill("SIGKILL");
});

describe("docs/mcp.md: MCP tools", () => {
  it("shows examples/mcp.ts as it is", () => {
    const readme = readFileSync(new URL("../../docs/mcp.md", import.meta.url), "utf8");
    const block = /<!-- mcp-example:start -->\n```ts\n([\s\S]*?)```\n<!-- mcp-example:end -->/.exec(readme)?.[1];
    expect(block).toBe(readFileSync(new URL("../../examples/mcp.ts", import.meta.url), "utf8"));
  });

  it("runs against examples/mcp-server.ts and ends done with the tool's result", async () => {
    const port = await freePort();
    server = spawn(process.execPath, ["--import", "tsx", "examples/mcp-server.ts"], { cwd: ROOT, env: { ...process.env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    server.stdout!.on("data", (d) => (out += d));
    server.stderr!.on("data", (d) => (out += d));
    for (let i = 0; i < 300 && !out.includes("MCP server on"); i++) await new Promise((r) => setTimeout(r, 100));
    expect(out).toContain(`MCP server on http://127.0.0.1:${port}/mcp`);
    const r = spawnSync(process.execPath, ["--import", "tsx", "examples/mcp.ts"], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, MCP_URL: `http://127.0.0.1:${port}/mcp` },
    });
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe('done {"sum":5}');
  }, 90_000);
});
