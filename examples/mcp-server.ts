/**
 * A small MCP server for the "MCP tools" example of docs/mcp.md: the official
 * SDK's McpServer with one tool, `add`, over Streamable HTTP (stateless: a
 * fresh server and transport per request) on http://127.0.0.1:$PORT/mcp
 * (PORT defaults to 3001).
 *
 *   npx tsx examples/mcp-server.ts
 */
import { createServer } from "node:http";
import process from "node:process";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

function mcpServer(): McpServer {
  const server = new McpServer({ name: "calculator", version: "1.0.0" });
  server.registerTool("add", {
    description: "Add two numbers",
    inputSchema: { a: z.number(), b: z.number() },
    outputSchema: { sum: z.number() },
    annotations: { readOnlyHint: true },
  }, async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }], structuredContent: { sum: a + b } }));
  return server;
}

const port = Number(process.env.PORT ?? 3001);
createServer(async (req, res) => {
  const server = mcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => void server.close());
  await server.connect(transport);
  await transport.handleRequest(req, res);
}).listen(port, "127.0.0.1", () => console.log(`MCP server on http://127.0.0.1:${port}/mcp`));
