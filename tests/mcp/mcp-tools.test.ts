/**
 * mcpTools() against real MCP servers built with the official SDK
 * (tests/helpers/mcp-server.ts over Streamable HTTP,
 * tests/fixtures/mcp/stdio-server.ts over stdio): the tools as the model
 * sees them, a call, a tool error, a schema violation that never reaches the
 * server, a server that dies mid-call (retryable, the next call reconnects),
 * `list_changed`, `allow` and `prefix`, and the definition-time refusals.
 */
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mcpTools } from "@gatehouse-runtime/core/mcp";
import { checkOutcome } from "../../contracts/check.ts";
import { DefinitionError } from "../../errors/errors.ts";
import { prepareArgs, toolSpec } from "../../tools/specs.ts";
import type { AnyTool } from "../../tools/define.ts";
import { startMcpServer, type TestMcpServer } from "../helpers/mcp-server.ts";

const ctx = (signal = new AbortController().signal) => ({ agentId: "a1", turnId: "turn_1", toolCallId: "call_1", signal });
const byName = (tools: AnyTool[], name: string) => {
  const t = tools.find((x) => x.name === name);
  if (!t) throw new Error(`no tool ${name} in ${tools.map((x) => x.name).join(", ")}`);
  return t;
};

/** Runs a tool as the host does: arguments checked and prepared first, then execute. */
async function call(tool: AnyTool, args: unknown) {
  const prepared = prepareArgs(tool, args);
  if (!prepared.ok) return { ok: false as const, error: { type: "invalid_arguments", message: prepared.message } };
  return checkOutcome(tool, await tool.execute!(prepared.args, ctx()) as never).outcome;
}

let server: TestMcpServer;
beforeAll(async () => {
  server = await startMcpServer();
});
afterAll(async () => {
  await server?.stop();
});

describe("mcpTools() over Streamable HTTP", () => {
  it("offers the server's tools with its names, descriptions and input schemas, outputSchema as deliverable, retrySafe from the annotations", async () => {
    const tools = await mcpTools({ url: server.url });
    try {
      expect(tools.map((t) => t.name).sort()).toEqual(["add", "echo", "fail", "hang"]);
      const add = byName(tools, "add");
      expect(add.description).toBe("Add two numbers");
      const spec = toolSpec(add);
      expect(spec.function.parameters).toMatchObject({
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
      });
      expect(add.deliverable).toBeDefined();
      expect(add.retrySafe).toBe(true);
      expect(byName(tools, "echo").retrySafe).toBeUndefined();
      expect(byName(tools, "echo").deliverable).toBeUndefined();
      // The deliverable is the server's contract: a result without `sum` fails it.
      const refused = checkOutcome(add, { ok: true, value: { total: 3 } });
      expect(refused.outcome).toMatchObject({ ok: false, error: { type: "contract_violation" } });
    } finally {
      await tools.close();
    }
  }, 30_000);

  it("a call returns the structured result, text results as text, and isError as the error outcome tool_error", async () => {
    const tools = await mcpTools({ url: server.url });
    try {
      expect(await call(byName(tools, "add"), { a: 2, b: 3 })).toEqual({ ok: true, value: { sum: 5 } });
      expect(await call(byName(tools, "echo"), { text: "hello" })).toEqual({ ok: true, value: "hello" });
      expect(await call(byName(tools, "fail"), {})).toEqual({
        ok: false,
        error: { type: "tool_error", message: "the disk is full", retryable: false },
      });
      expect(tools.connections).toBe(1); // one connection for every call
    } finally {
      await tools.close();
    }
  }, 30_000);

  it("a schema violation is invalid_arguments and never reaches the server", async () => {
    const tools = await mcpTools({ url: server.url });
    try {
      const before = server.calls.length;
      const r = await call(byName(tools, "add"), { a: "two", b: 3 });
      expect(r).toMatchObject({ ok: false, error: { type: "invalid_arguments" } });
      expect((r as { error: { message: string } }).error.message).toMatch(/Invalid arguments for tool "add"/);
      expect(await call(byName(tools, "echo"), { text: "" })).toMatchObject({ ok: false, error: { type: "invalid_arguments" } });
      expect(server.calls.length).toBe(before);
    } finally {
      await tools.close();
    }
  }, 30_000);

  it("a server that dies mid-call: the call fails retryable (mcp_unavailable), the next call reconnects", async () => {
    const local = await startMcpServer();
    const tools = await mcpTools({ url: local.url });
    try {
      expect(await call(byName(tools, "add"), { a: 1, b: 1 })).toEqual({ ok: true, value: { sum: 2 } });
      const hanging = call(byName(tools, "hang"), {});
      while (!local.calls.includes("hang")) await new Promise((r) => setTimeout(r, 20));
      await local.stop();
      const failed = await hanging;
      expect(failed).toMatchObject({ ok: false, error: { type: "mcp_unavailable", retryable: true } });
      // While it is down: retryable again, no throw.
      expect(await call(byName(tools, "add"), { a: 1, b: 2 })).toMatchObject({ ok: false, error: { type: "mcp_unavailable", retryable: true } });
      await local.start();
      expect(await call(byName(tools, "add"), { a: 2, b: 2 })).toEqual({ ok: true, value: { sum: 4 } });
      expect(tools.connections).toBe(2);
      expect(local.sessions).toBe(2);
    } finally {
      await tools.close();
      await local.stop();
    }
  }, 60_000);

  it("a call aborted through its signal (the worker lost the agent) answers retryable and keeps the connection", async () => {
    const tools = await mcpTools({ url: server.url });
    try {
      const ac = new AbortController();
      const pending = byName(tools, "hang").execute!({}, ctx(ac.signal));
      const before = server.calls.filter((c) => c === "hang").length;
      while (server.calls.filter((c) => c === "hang").length === before) await new Promise((r) => setTimeout(r, 20));
      ac.abort(new Error("lease lost"));
      expect(await pending).toMatchObject({ ok: false, error: { type: "mcp_unavailable", retryable: true } });
      expect(await call(byName(tools, "add"), { a: 1, b: 2 })).toEqual({ ok: true, value: { sum: 3 } });
      expect(tools.connections).toBe(1);
    } finally {
      await tools.close();
    }
  }, 30_000);

  it("list_changed: the next call lists again; a removed tool is tool_not_offered without a call, refresh() builds the new list", async () => {
    const local = await startMcpServer();
    local.addTool("extra");
    const tools = await mcpTools({ url: local.url, prefix: "x_" });
    try {
      expect(tools.map((t) => t.name).sort()).toEqual(["x_add", "x_echo", "x_extra", "x_fail", "x_hang"]);
      expect(await call(byName(tools, "x_extra"), {})).toEqual({ ok: true, value: "extra" });
      local.removeTool("extra");
      local.addTool("newer");
      let r = await call(byName(tools, "x_extra"), {});
      // The notification travels on its own stream; give it the time a busy machine needs.
      for (let i = 0; i < 100 && (r.ok || r.error.type !== "tool_not_offered"); i++) {
        await new Promise((res) => setTimeout(res, 50));
        r = await call(byName(tools, "x_extra"), {});
      }
      expect(r).toMatchObject({ ok: false, error: { type: "tool_not_offered", retryable: false } });
      expect(local.calls.filter((c) => c === "extra").length).toBe(1);
      expect((await tools.refresh()).map((t) => t.name).sort()).toEqual(["x_add", "x_echo", "x_fail", "x_hang", "x_newer"]);
    } finally {
      await tools.close();
      await local.stop();
    }
  }, 60_000);

  it("a server name outside [A-Za-z0-9_-] (after prefix) becomes _; the call uses the server's name", async () => {
    const local = await startMcpServer();
    local.addTool("docs.search");
    const tools = await mcpTools({ url: local.url, allow: ["docs.search"], prefix: "my " });
    try {
      expect(tools.map((t) => t.name)).toEqual(["my_docs_search"]);
      expect(await call(tools[0]!, { n: 1 })).toEqual({ ok: true, value: "docs.search" });
    } finally {
      await tools.close();
      await local.stop();
    }
  }, 30_000);

  it("allow picks tools and refuses names the server does not list; a bad url or option is a DefinitionError", async () => {
    const tools = await mcpTools({ url: server.url, allow: ["echo"], headers: { authorization: "Bearer t" } });
    expect(tools.map((t) => t.name)).toEqual(["echo"]);
    await tools.close();
    await expect(mcpTools({ url: server.url, allow: ["nope"] })).rejects.toThrow(/lists no tool "nope"/);
    await expect(mcpTools({ url: "ftp://x" })).rejects.toThrow(DefinitionError);
    await expect(mcpTools({ url: server.url, timeoutMs: 0 })).rejects.toThrow(DefinitionError);
    await expect(mcpTools({} as never)).rejects.toThrow(/needs \{ url \}/);
  }, 30_000);
});

describe("mcpTools() over stdio", () => {
  it("spawns the server, lists and calls its tools, and the connection ends with close()", async () => {
    const script = fileURLToPath(new URL("../fixtures/mcp/stdio-server.ts", import.meta.url));
    const tools = await mcpTools({ command: process.execPath, args: ["--import", "tsx", script], env: { PATH: process.env.PATH ?? "" } });
    try {
      expect(tools.map((t) => t.name).sort()).toEqual(["add", "echo", "fail", "hang"]);
      expect(await call(byName(tools, "add"), { a: 20, b: 22 })).toEqual({ ok: true, value: { sum: 42 } });
      expect(await call(byName(tools, "fail"), {})).toMatchObject({ ok: false, error: { type: "tool_error", message: "the disk is full" } });
    } finally {
      await tools.close();
    }
    expect(await call(byName(tools, "add"), { a: 1, b: 1 })).toMatchObject({ ok: false, error: { type: "mcp_unavailable" } });
  }, 60_000);
});

describe("defineTool({ inputSchema }): a JSON Schema shown to the model as is", () => {
  it("the spec is the given schema (without $schema; fixed keys hidden, defaulted ones optional); parameters still validate", async () => {
    const { z } = await import("zod");
    const { defineTool } = await import("../../tools/define.ts");
    const inputSchema = {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      properties: { q: { type: "string", description: "the query", minLength: 2 }, limit: { type: "integer" }, tenant: { type: "string" } },
      required: ["q", "limit", "tenant"],
      additionalProperties: false,
    };
    const tool = defineTool({
      name: "search",
      description: "Search",
      parameters: z.object({ q: z.string().min(2), limit: z.number().int(), tenant: z.string() }),
      inputSchema,
      defaults: { limit: 10 },
      fixed: { tenant: "acme" },
      execute: () => null,
    });
    expect(toolSpec(tool).function.parameters).toEqual({
      type: "object",
      properties: { q: { type: "string", description: "the query", minLength: 2 }, limit: { type: "integer" } },
      required: ["q"],
      additionalProperties: false,
    });
    expect(inputSchema.properties.tenant).toBeDefined(); // the caller's object is not changed
    expect(prepareArgs(tool, { q: "x" })).toMatchObject({ ok: false });
    expect(prepareArgs(tool, { q: "xy" })).toEqual({ ok: true, args: { q: "xy", limit: 10, tenant: "acme" } });
  });

  it("refuses an inputSchema that is not a JSON Schema object", async () => {
    const { z } = await import("zod");
    const { defineTool } = await import("../../tools/define.ts");
    for (const inputSchema of [{ type: "string" }, [], "x", null]) {
      expect(() => defineTool({ name: "t", description: "t", parameters: z.object({}), inputSchema: inputSchema as never })).toThrow(
        expect.objectContaining({ name: "DefinitionError", key: "inputSchema" }),
      );
    }
  });
});
