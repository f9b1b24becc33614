/**
 * A hostile MCP server for tests: the official SDK's low-level `Server`
 * behind its StreamableHTTPServerTransport on a node:http server, answering
 * `tools/list` with whatever listing the test gives it (reserved names,
 * duplicate names, thousands of tools, huge schemas), `pageSize` tools a
 * page with a `nextCursor` after each page but the last; `tools/call`
 * answers the tool's name as text.
 *
 * - `listRequests` counts the `tools/list` requests it answered (one a page),
 *   so a test can see how much of a listing the client read.
 * - `listingBytes` is the JSON size of the whole listing (every page).
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

export interface HostileTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
}

export interface HostileMcpServer {
  readonly url: string;
  readonly listRequests: number;
  readonly listingBytes: number;
  stop(): Promise<void>;
}

/** `count` tools named `${prefix}${i}`, each with an input schema of `properties` string properties. */
export function manyTools(count: number, properties: number, prefix = "tool_"): HostileTool[] {
  const props: Record<string, unknown> = {};
  for (let p = 0; p < properties; p++) props[`field_${p}`] = { type: "string", description: `The field number ${p} of this tool` };
  const inputSchema = { type: "object", properties: props };
  return Array.from({ length: count }, (_, i) => ({ name: `${prefix}${i}`, description: `Tool ${i}`, inputSchema }));
}

/** The SDK server answering `tools/list` with `tools`, `pageSize` a page (also run over stdio: tests/fixtures/mcp/hostile-stdio-server.ts). */
export function hostileServer(tools: HostileTool[], pageSize: number, onList: () => void = () => {}): Server {
  const server = new Server({ name: "gatehouse-hostile", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async (req) => {
    onList();
    const start = Number(req.params?.cursor ?? 0);
    const end = start + pageSize;
    return { tools: tools.slice(start, end), ...(end < tools.length ? { nextCursor: String(end) } : {}) };
  });
  server.setRequestHandler(CallToolRequestSchema, async (req) => ({ content: [{ type: "text", text: req.params.name }] }));
  return server;
}

export async function startHostileMcpServer(tools: HostileTool[], opts: { pageSize?: number } = {}): Promise<HostileMcpServer> {
  const pageSize = opts.pageSize ?? (tools.length || 1);
  let listRequests = 0;
  const live = new Map<string, StreamableHTTPServerTransport>();

  function newSession() {
    const server = hostileServer(tools, pageSize, () => listRequests++);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void live.set(id, transport),
    });
    return { server, transport };
  }

  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const id = req.headers["mcp-session-id"];
    const known = typeof id === "string" ? live.get(id) : undefined;
    if (known) return known.handleRequest(req, res);
    const s = newSession();
    await s.server.connect(s.transport);
    await s.transport.handleRequest(req, res);
  };
  const http: HttpServer = createServer((req, res) => {
    // A client that stops reading mid-answer resets the socket: that is expected here.
    res.on("error", () => {});
    void handler(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const port = (http.address() as { port: number }).port;
  const listingBytes = new TextEncoder().encode(JSON.stringify(tools)).length;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get listRequests() {
      return listRequests;
    },
    listingBytes,
    async stop() {
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
      await Promise.all([...live.values()].map((t) => t.close().catch(() => {})));
    },
  };
}
