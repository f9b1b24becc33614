/**
 * mcpTools() in workerd, the Workers runtime (Miniflare, no nodejs_compat):
 * a Worker's agent calls a real MCP server's tool over Streamable HTTP and
 * ends done with its result (tests/workerd/fixtures/mcp-worker.ts). workerd
 * lets no request use I/O another request opened: the next request's call is
 * refused before it is sent, so it opens its own connection and makes the
 * call there, once (the server runs each call once).
 *
 * The bundle is given to Miniflare as an explicit module, as wrangler gives
 * its bundle: the stdio transport's `import()` has a computed specifier
 * (tools/mcp/tools.ts), which Miniflare's module auto-discovery
 * (`modules: true` with a script) refuses to follow.
 */
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMcpServer, type TestMcpServer } from "../helpers/mcp-server.ts";
import { bundleForWorkerd } from "../workerd/bundle.ts";
import { COMPATIBILITY_DATE } from "../workerd/harness.ts";

let server: TestMcpServer;
let worker: Miniflare | undefined;
beforeAll(async () => {
  server = await startMcpServer();
});
afterAll(async () => {
  await worker?.dispose();
  await server?.stop();
});

describe("mcpTools() on Workers", () => {
  it("an agent calls the MCP tool over Streamable HTTP and ends done; the next request opens its own connection, and the server runs each call once", async () => {
    const bundle = await bundleForWorkerd(new URL("../workerd/fixtures/mcp-worker.ts", import.meta.url).pathname);
    expect(bundle.nodeBuiltins).toEqual([]);
    worker = new Miniflare({
      modules: [{ type: "ESModule", path: "worker.js", contents: bundle.code }],
      compatibilityDate: COMPATIBILITY_DATE,
      bindings: { MCP_URL: server.url },
    });
    const post = async (body: unknown) =>
      await (await worker!.dispatchFetch("http://worker.test/", { method: "POST", body: JSON.stringify(body) })).json();
    const first = await post({ a: 2, b: 3 });
    expect(first).toEqual({ state: "done", output: { sum: 5 }, connections: 1 });
    const second = await post({ a: 4, b: 5 });
    expect(second).toEqual({ state: "done", output: { sum: 9 }, connections: 2 });
    expect(server.calls.filter((c) => c === "add")).toHaveLength(2);
  }, 90_000);
});
