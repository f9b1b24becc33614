/**
 * A real MCP server for tests: the official SDK's McpServer behind its
 * StreamableHTTPServerTransport on a node:http server (one McpServer and
 * transport per session), with the tools of tests/fixtures/mcp/tools.ts.
 *
 * - `stop()` closes the server and every open connection, as a crash does;
 *   `start()` listens again on the same port with no session known.
 * - `addTool(name)` / `removeTool(name)` change the list on every session
 *   (the SDK sends `notifications/tools/list_changed`).
 * - `calls` lists the tools run, in order.
 */
import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import { McpServer, type RegisteredTool } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { registerTestTools } from "../fixtures/mcp/tools.ts";

export interface TestMcpServer {
  readonly url: string;
  readonly calls: string[];
  /** Sessions opened (a client's initialize). */
  readonly sessions: number;
  start(): Promise<void>;
  stop(): Promise<void>;
  addTool(name: string): void;
  removeTool(name: string): void;
}

export async function startMcpServer(opts: { port?: number } = {}): Promise<TestMcpServer> {
  const calls: string[] = [];
  let sessions = 0;
  const live = new Map<string, { server: McpServer; transport: StreamableHTTPServerTransport }>();
  let extra: string[] = [];
  const registered = new Map<McpServer, Map<string, RegisteredTool>>();

  function newSession(): { server: McpServer; transport: StreamableHTTPServerTransport } {
    const server = new McpServer({ name: "gatehouse-test", version: "1.0.0" });
    registerTestTools(server, calls);
    const mine = new Map<string, RegisteredTool>();
    registered.set(server, mine);
    for (const name of extra) mine.set(name, registerExtra(server, name));
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions++;
        live.set(id, { server, transport });
      },
    });
    return { server, transport };
  }

  function registerExtra(server: McpServer, name: string): RegisteredTool {
    return server.registerTool(name, { description: `Extra tool ${name}`, inputSchema: { n: z.number().optional() } }, async () => {
      calls.push(name);
      return { content: [{ type: "text", text: name }] };
    });
  }

  let http: Server | undefined;
  let port = opts.port ?? 0;
  const handler = async (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => {
    const id = req.headers["mcp-session-id"];
    const known = typeof id === "string" ? live.get(id) : undefined;
    if (known) return known.transport.handleRequest(req, res);
    if (typeof id === "string") {
      res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
      return;
    }
    const s = newSession();
    await s.server.connect(s.transport);
    await s.transport.handleRequest(req, res);
  };

  const api: TestMcpServer = {
    get url() {
      return `http://127.0.0.1:${port}/mcp`;
    },
    calls,
    get sessions() {
      return sessions;
    },
    async start() {
      const server = createServer((req, res) => void handler(req, res).catch((err) => res.writeHead(500).end(String(err))));
      await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
      port = (server.address() as { port: number }).port;
      http = server;
    },
    async stop() {
      const server = http;
      http = undefined;
      if (!server) return;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const open = [...live.values()];
      live.clear();
      await Promise.all(open.map((s) => s.server.close().catch(() => {})));
    },
    addTool(name) {
      extra.push(name);
      for (const [server, mine] of registered) if (live.size > 0 && [...live.values()].some((s) => s.server === server)) mine.set(name, registerExtra(server, name));
    },
    removeTool(name) {
      extra = extra.filter((n) => n !== name);
      for (const { server } of live.values()) {
        const tool = registered.get(server)?.get(name);
        tool?.remove();
      }
    },
  };
  await api.start();
  return api;
}
