/**
 * `@gatehouse-runtime/core/mcp`: the tools of an MCP server as gatehouse
 * tools (tools/mcp/tools.ts). Needs the optional peer dependency
 * `@modelcontextprotocol/sdk`; the root module never imports it.
 */
export { mcpTools } from "./tools/mcp/tools.ts";
export type { McpHttpServer, McpServerOptions, McpTools, McpToolsOptions } from "./tools/mcp/tools.ts";
export { MCP_LIMIT_DEFAULTS, McpLimitError } from "./tools/mcp/limits.ts";
export type { McpLimit, McpLogger } from "./tools/mcp/limits.ts";
export type { StdioServer } from "./tools/mcp/stdio.ts";
