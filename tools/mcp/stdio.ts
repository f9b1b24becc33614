/**
 * The stdio transport of mcpTools (tools/mcp/tools.ts): the MCP server as a
 * child process speaking JSON-RPC on its stdin and stdout. It spawns a
 * process, so it runs on Node, Deno and Bun, never on Workers; it is loaded
 * only when a `command` is given, by a specifier bundlers do not follow, so
 * the HTTP path stays Web-API only.
 */
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";

export interface StdioServer {
  command: string;
  args?: string[];
  /** The child's environment (default: the SDK's safe subset of the parent's: PATH, HOME, ...). */
  env?: Record<string, string>;
  cwd?: string;
}

export function stdioTransport(server: StdioServer): Transport {
  return new StdioClientTransport({ command: server.command, args: server.args, env: server.env, cwd: server.cwd, stderr: "inherit" });
}
