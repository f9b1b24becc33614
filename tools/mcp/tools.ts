/**
 * mcpTools(): the tools of an MCP server as gatehouse tools.
 *
 * Each tool the server lists (or each one `allow` names) becomes a
 * defineTool() tool with `execute`:
 * - name: the server's name, after `prefix`; characters outside
 *   `[A-Za-z0-9_-]` become `_` (the call still uses the server's name);
 * - description: the server's description (else its title, else its name);
 * - parameters: the server's `inputSchema`, shown to the model as is
 *   (`inputSchema` of defineTool) and checked before the call through its zod
 *   form (tools/mcp/schema.ts): a bad argument is `invalid_arguments` and
 *   never reaches the server;
 * - deliverable: the server's `outputSchema`, when it declares one;
 * - retrySafe: only when the server's annotations say `readOnlyHint` or
 *   `idempotentHint`.
 * A call's result is an Outcome: `isError` is the error outcome `tool_error`
 * (the server's text as the message); otherwise the value is the
 * `structuredContent` when there is one, else the text of the content (one
 * string; the content blocks themselves when any is not text). A lost
 * connection is `mcp_unavailable` (retryable) and the next call reconnects
 * (tools/mcp/connection.ts); a JSON-RPC error from the server is
 * `mcp_error`; no answer within `timeoutMs` is `timeout` (retryable).
 *
 * The listing: taken when mcpTools() runs. When the server announces
 * `notifications/tools/list_changed`, the next call lists again first; a
 * tool the server no longer lists is answered `tool_not_offered` without a
 * call. An agent's tools are fixed when it is defined, so a tool the server
 * adds later reaches only agents defined from a later `mcpTools()` (or
 * `refresh()`).
 *
 * Bounds (tools/mcp/limits.ts, where the invariants are): at most
 * `maxTools` tools and `maxListingBytes` bytes of listing per server, read
 * while listing (an McpLimitError naming the limit and its value), and
 * `maxSchemaBytes` per tool. A tool over `maxSchemaBytes`, with a reserved
 * name (`submit_result`, `agent_output`), a name an earlier tool already
 * took, or one defineTool() refuses is skipped with a warning
 * (`mcp_tool_skipped` through `logger`); the other tools stay. A tool that
 * `allow` names is never skipped: its problem is the error.
 *
 * Transports: `{ url, headers? }` is Streamable HTTP over `fetch` (every
 * runtime, Workers included); `{ command, args?, env? }` spawns a stdio
 * server (Node, Deno, Bun; tools/mcp/stdio.ts, loaded only then).
 */
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { error, type Outcome, ok } from "../../common/outcome.ts";
import { isPlainObject } from "../../common/json.ts";
import { DefinitionError } from "../../errors/errors.ts";
import { type AnyTool, defineTool, RESERVED_TOOL_NAMES } from "../define.ts";
import { type CallAnswer, type ListedTool, McpConnection } from "./connection.ts";
import {
  consoleWarnLogger,
  countingFetch,
  jsonBytes,
  type ListingMeter,
  McpLimitError,
  type McpLogger,
  limitsOf,
  schemaBytesError,
} from "./limits.ts";
import { argumentsSchema, deliverableSchema } from "./schema.ts";
import type { StdioServer } from "./stdio.ts";

export interface McpHttpServer {
  /** The server's Streamable HTTP endpoint, e.g. `https://mcp.example.com/mcp`. */
  url: string | URL;
  /** Sent with every request (e.g. `Authorization`). */
  headers?: Record<string, string>;
}

export type McpServerOptions = McpHttpServer | StdioServer;

export type McpToolsOptions = McpServerOptions & {
  /** Put before every tool name (e.g. `"github_"`), so tools of several servers do not collide. */
  prefix?: string;
  /** Only these tools (the server's names); each must be listed by the server. */
  allow?: string[];
  /** Deadline of one call in ms (default 60 s); also the gatehouse tool's `timeoutMs`. */
  timeoutMs?: number;
  /** Most tools the server may list (default 256); more is an McpLimitError. */
  maxTools?: number;
  /** Most bytes of one tool's inputSchema and outputSchema JSON (default 65,536); a bigger tool is skipped with a warning. */
  maxSchemaBytes?: number;
  /** Most bytes of the server's whole tool listing, every page (default 4 MiB); more is an McpLimitError, raised while reading. */
  maxListingBytes?: number;
  /** Where skipped tools are reported (`mcp_tool_skipped`); default: a JSON line on console.warn. gatehouse's Logger fits. */
  logger?: McpLogger;
};

/** The tools of one server, with the connection they share. */
export type McpTools = AnyTool[] & {
  /** Lists the server's tools again and builds them anew (for agents defined afterwards). */
  refresh(): Promise<AnyTool[]>;
  /** Closes the connection; later calls answer `mcp_unavailable`. */
  close(): Promise<void>;
  /** Connections opened so far (a reconnect after a failure adds one). */
  readonly connections: number;
};

const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * @example
 * const tools = await mcpTools({ url: "https://mcp.example.com/mcp", prefix: "docs_", allow: ["search"] });
 * const agent = defineAgent({ name: "helper", model, tools });
 */
export async function mcpTools(options: McpToolsOptions): Promise<McpTools> {
  const { label, makeTransport } = transportOf(options);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new DefinitionError("mcpTools(): timeoutMs must be a positive integer", { key: "timeoutMs" });
  }
  const prefix = options.prefix ?? "";
  if (typeof prefix !== "string") throw new DefinitionError("mcpTools(): prefix must be a string", { key: "prefix" });
  if (options.allow !== undefined && (!Array.isArray(options.allow) || !options.allow.every((n) => typeof n === "string"))) {
    throw new DefinitionError("mcpTools(): allow must be a list of tool names", { key: "allow" });
  }
  const limits = limitsOf(options);
  const logger = options.logger ?? consoleWarnLogger;
  if (typeof logger?.warn !== "function") throw new DefinitionError("mcpTools(): logger must have a warn(msg, fields) method", { key: "logger" });
  const connection = new McpConnection(label, makeTransport, limits);
  const build = async () => {
    const listed = await connection.listTools();
    return toolsOf(listed, connection, { label, prefix, allow: options.allow, timeoutMs, maxSchemaBytes: limits.maxSchemaBytes, logger });
  };
  let tools: AnyTool[];
  try {
    tools = await build();
  } catch (err) {
    await connection.close();
    throw err;
  }
  return Object.defineProperties(tools, {
    refresh: { value: build },
    close: { value: () => connection.close() },
    connections: { get: () => connection.opened },
  }) as McpTools;
}

function transportOf(options: McpToolsOptions): { label: string; makeTransport: (meter: ListingMeter) => Promise<Transport> } {
  if (!options || typeof options !== "object") throw new DefinitionError("mcpTools() needs { url } or { command }");
  if ("url" in options && options.url !== undefined) {
    let url: URL;
    try {
      url = new URL(options.url);
    } catch {
      throw new DefinitionError(`mcpTools(): url ${JSON.stringify(String(options.url))} is not a URL`, { key: "url" });
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new DefinitionError(`mcpTools(): url must be http: or https:, got ${url.protocol}`, { key: "url" });
    }
    const headers = options.headers;
    if (headers !== undefined && !isPlainObject(headers)) {
      throw new DefinitionError("mcpTools(): headers must be an object of strings", { key: "headers" });
    }
    return {
      label: url.origin + url.pathname,
      // The fetch counts the bytes of tool listings as they arrive (tools/mcp/limits.ts).
      makeTransport: async (meter) =>
        new StreamableHTTPClientTransport(url, { fetch: countingFetch(meter), ...(headers ? { requestInit: { headers } } : {}) }),
    };
  }
  if ("command" in options && typeof options.command === "string" && options.command !== "") {
    const server: StdioServer = { command: options.command, args: options.args, env: options.env, cwd: options.cwd };
    return {
      label: `\`${[server.command, ...(server.args ?? [])].join(" ")}\``,
      makeTransport: async () => (await loadStdio()).stdioTransport(server),
    };
  }
  throw new DefinitionError("mcpTools() needs { url } (Streamable HTTP) or { command } (stdio)", { key: "url" });
}

/**
 * tools/mcp/stdio.ts by a specifier bundlers do not resolve: it spawns a
 * process (Node built-ins), and a Workers bundle of the HTTP path must not
 * carry it. Source runs (tsx, Deno, Bun) load the .ts, the npm build the .js.
 */
async function loadStdio(): Promise<typeof import("./stdio.ts")> {
  const ext = import.meta.url.endsWith(".ts") ? "ts" : "js";
  const specifier = new URL(`./stdio.${ext}`, import.meta.url).href;
  return await import(specifier);
}

const NAME_CHAR = /[^a-zA-Z0-9_-]/g;

interface BuildOptions {
  label: string;
  prefix: string;
  allow: string[] | undefined;
  timeoutMs: number;
  maxSchemaBytes: number;
  logger: McpLogger;
}

function toolsOf(listed: ListedTool[], connection: McpConnection, o: BuildOptions): AnyTool[] {
  const byName = new Map<string, ListedTool>();
  for (const t of listed) if (!byName.has(t.name)) byName.set(t.name, t);
  if (o.allow) {
    const missing = o.allow.filter((n) => !byName.has(n));
    if (missing.length > 0) {
      throw new DefinitionError(
        `mcpTools(): the MCP server ${o.label} lists no tool ${missing.map((n) => JSON.stringify(n)).join(", ")} (it lists: ${[...byName.keys()].join(", ") || "none"})`,
        { key: "allow" },
      );
    }
  }
  const chosen = o.allow ? o.allow.map((n) => byName.get(n)!) : listed;
  const seen = new Map<string, string>();
  const tools: AnyTool[] = [];
  for (const t of chosen) {
    const built = buildOne(t, seen, connection, o);
    if ("tool" in built) tools.push(built.tool);
    else if (o.allow) throw built.error;
    else o.logger.warn("mcp_tool_skipped", { server: o.label, tool: t.name, ...built.fields, message: built.error.message });
  }
  return tools;
}

type Built = { tool: AnyTool } | { error: DefinitionError; fields: Record<string, unknown> };

/** One listed tool as a gatehouse tool, or why it is not offered (tools/mcp/limits.ts). */
function buildOne(t: ListedTool, seen: Map<string, string>, connection: McpConnection, o: BuildOptions): Built {
  const name = `${o.prefix}${t.name}`.replace(NAME_CHAR, "_");
  if (RESERVED_TOOL_NAMES.has(name)) {
    const error = new DefinitionError(
      `mcpTools(): the tool name "${name}" is reserved for the built-in completion tool (the MCP tool "${t.name}" of ${o.label}); give a prefix`,
      { key: "prefix" },
    );
    return { error, fields: { name, reason: "reserved" } };
  }
  const other = seen.get(name);
  if (other !== undefined) {
    const error = new DefinitionError(`mcpTools(): the MCP tools "${other}" and "${t.name}" both become "${name}"; pick one with allow`, { key: "allow" });
    return { error, fields: { name, reason: "duplicate" } };
  }
  seen.set(name, t.name);
  const bytes = jsonBytes(t.inputSchema) + jsonBytes(t.outputSchema);
  if (bytes > o.maxSchemaBytes) {
    return { error: schemaBytesError(o.label, t.name, o.maxSchemaBytes, bytes), fields: { name, reason: "maxSchemaBytes", limit: o.maxSchemaBytes, bytes } };
  }
  try {
    return { tool: toolOf(t, name, connection, o) };
  } catch (err) {
    if (!(err instanceof DefinitionError)) throw err;
    return { error: err, fields: { name, reason: "invalid" } };
  }
}

function toolOf(t: ListedTool, name: string, connection: McpConnection, o: BuildOptions): AnyTool {
  const description = [t.description, t.title, t.annotations?.title].find((s) => typeof s === "string" && s.trim() !== "") ?? t.name;
  const deliverable = deliverableSchema(t.outputSchema);
  const retrySafe = t.annotations?.readOnlyHint === true || t.annotations?.idempotentHint === true;
  return defineTool({
    name,
    description,
    parameters: argumentsSchema(t.inputSchema),
    inputSchema: t.inputSchema,
    timeoutMs: o.timeoutMs,
    ...(deliverable ? { deliverable } : {}),
    ...(retrySafe ? { retrySafe: true } : {}),
    execute: async (args, ctx) => {
      // The server said its list changed: list again, and refuse a tool it dropped.
      try {
        const now = await connection.listTools();
        if (!now.some((x) => x.name === t.name)) {
          return error({ type: "tool_not_offered", message: `The MCP server ${o.label} no longer offers the tool "${t.name}"`, retryable: false });
        }
      } catch (err) {
        if (err instanceof McpLimitError) {
          return error({ type: "mcp_limit", message: err.message, retryable: false, metadata: { limit: err.limit, value: err.value } });
        }
        return error({ type: "mcp_unavailable", message: `cannot list the tools of the MCP server ${o.label}: ${(err as Error).message}`, retryable: true });
      }
      return outcomeOf(await connection.call(t.name, args, { signal: ctx.signal, timeoutMs: o.timeoutMs }), t.name);
    },
  });
}

type Block = { type?: unknown; text?: unknown };

function textOf(content: unknown[] | undefined): string | undefined {
  const blocks = (content ?? []) as Block[];
  if (!blocks.every((b) => b && b.type === "text" && typeof b.text === "string")) return undefined;
  return blocks.map((b) => b.text as string).join("\n");
}

/** What one call answered, as the tool's outcome. */
export function outcomeOf(answer: CallAnswer, tool: string): Outcome {
  switch (answer.kind) {
    case "unavailable":
      return error({ type: "mcp_unavailable", message: answer.message, retryable: true });
    case "timeout":
      return error({ type: "timeout", message: answer.message, retryable: true });
    case "server_error":
      return error({ type: "mcp_error", message: answer.message, retryable: false, metadata: { code: answer.code } });
    case "result": {
      const r = answer.result;
      const text = textOf(r.content);
      if (r.isError === true) {
        return error({ type: "tool_error", message: text || `the MCP tool "${tool}" reported an error`, retryable: false });
      }
      if (r.structuredContent !== undefined) return ok(r.structuredContent);
      return ok(text ?? r.content ?? null);
    }
  }
}
