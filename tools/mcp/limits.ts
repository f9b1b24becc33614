/**
 * The bounds mcpTools() (tools/mcp/tools.ts) holds an MCP server to. A
 * server is code someone else runs: what it lists must not exhaust the
 * process's memory, and one bad tool must not cost the others.
 *
 * Invariants:
 * - Per server, `maxTools` (default 256) tools and `maxListingBytes`
 *   (default 4 MiB, the JSON of every page of `tools/list`) are read at
 *   most. Both are checked while the listing is read: paging stops at the
 *   page that crosses a bound, and over Streamable HTTP the bytes of a
 *   `tools/list` answer are counted as they arrive, so a single page over
 *   the byte bound is cut off there, not read whole (`countingFetch`). Over
 *   stdio the SDK reads a page (one line) whole, and the bound applies from
 *   one page to the next. Crossing either bound is an `McpLimitError`
 *   naming the limit and its value; mcpTools() then offers none of the
 *   server's tools (the listing is incomplete, so which tools a server
 *   meant to offer is unknown).
 * - Per tool, `maxSchemaBytes` (default 64 KiB, the JSON of its
 *   `inputSchema` and `outputSchema` together). A tool over it is skipped
 *   with a warning (`mcp_tool_skipped`, reason `maxSchemaBytes`) before its
 *   schema is turned into a validator; the other tools stay. When `allow`
 *   names the tool, the caller asked for it: an `McpLimitError`.
 * - A tool whose name (after `prefix`) is reserved (`submit_result`,
 *   `agent_output`: the built-in completion tools), the same as an earlier
 *   tool's, or otherwise refused by defineTool() is skipped with a warning
 *   (`mcp_tool_skipped` with `reason`); the rest stay. When `allow` names
 *   such a tool it is a DefinitionError, as before.
 */
import { DefinitionError } from "../../errors/errors.ts";

export const MCP_LIMIT_DEFAULTS = {
  maxTools: 256,
  maxSchemaBytes: 64 * 1024,
  maxListingBytes: 4 * 1024 * 1024,
} as const;

export type McpLimit = keyof typeof MCP_LIMIT_DEFAULTS;
export type McpLimits = Record<McpLimit, number>;

/** A bound of tools/mcp/limits.ts crossed by an MCP server: `limit` and its `value`, `observed` what was seen when reading stopped. */
export class McpLimitError extends DefinitionError {
  readonly limit: McpLimit;
  readonly value: number;
  readonly observed: number;
  readonly server: string;
  constructor(message: string, o: { limit: McpLimit; value: number; observed: number; server: string }) {
    super(message, { key: o.limit });
    this.name = "McpLimitError";
    this.limit = o.limit;
    this.value = o.value;
    this.observed = o.observed;
    this.server = o.server;
  }
}

/** Where skipped tools are reported; gatehouse's Logger (consoleLogger(), the app's own) fits. */
export interface McpLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/** The default: one JSON line on the console, as consoleLogger() writes it. */
export const consoleWarnLogger: McpLogger = {
  warn: (msg, fields) => console.warn(JSON.stringify({ level: "warn", msg, ...fields })),
};

/** The limits of `options`, defaults filled in; a value that is not a positive integer is a DefinitionError. */
export function limitsOf(options: Partial<Record<McpLimit, unknown>>): McpLimits {
  const out = { ...MCP_LIMIT_DEFAULTS } as McpLimits;
  for (const key of Object.keys(MCP_LIMIT_DEFAULTS) as McpLimit[]) {
    const v = options[key];
    if (v === undefined) continue;
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0) {
      throw new DefinitionError(`mcpTools(): ${key} must be a positive integer`, { key });
    }
    out[key] = v;
  }
  return out;
}

const encoder = new TextEncoder();

/** The UTF-8 size of a value's JSON. */
export function jsonBytes(value: unknown): number {
  return value === undefined ? 0 : encoder.encode(JSON.stringify(value)).length;
}

export function toolCountError(server: string, value: number, observed: number): McpLimitError {
  return new McpLimitError(
    `mcpTools(): the MCP server ${server} lists more than ${value} tools (maxTools); ${observed} read when reading stopped. Raise maxTools if this server is trusted`,
    { limit: "maxTools", value, observed, server },
  );
}

export function listingBytesError(server: string, value: number, observed: number): McpLimitError {
  return new McpLimitError(
    `mcpTools(): the tool listing of the MCP server ${server} is over ${value} bytes (maxListingBytes); ${observed} read when reading stopped. Raise maxListingBytes if this server is trusted`,
    { limit: "maxListingBytes", value, observed, server },
  );
}

export function schemaBytesError(server: string, tool: string, value: number, observed: number): McpLimitError {
  return new McpLimitError(
    `mcpTools(): the schemas of the tool ${JSON.stringify(tool)} of the MCP server ${server} are ${observed} bytes, over ${value} bytes (maxSchemaBytes)`,
    { limit: "maxSchemaBytes", value, observed, server },
  );
}

/**
 * The byte count of one listing (all its pages), shared by the connection
 * that lists and the fetch that reads the answers. `start()` arms it; a
 * `tools/list` answer read while armed is counted, and crossing `max` cuts
 * the answer off and aborts `signal`, with the error kept in `exceeded`.
 */
export class ListingMeter {
  bytes = 0;
  exceeded: McpLimitError | undefined;
  private controller: AbortController | undefined;

  constructor(
    private readonly server: string,
    readonly max: number,
  ) {}

  start(): AbortSignal {
    this.bytes = 0;
    this.exceeded = undefined;
    this.controller = new AbortController();
    return this.controller.signal;
  }

  stop() {
    this.controller = undefined;
  }

  get armed(): boolean {
    return this.controller !== undefined;
  }

  /** Counts `n` bytes read; the error once over the bound (also aborting the listing). */
  add(n: number): McpLimitError | undefined {
    this.bytes += n;
    if (this.bytes <= this.max || !this.controller) return undefined;
    this.exceeded ??= listingBytesError(this.server, this.max, this.bytes);
    this.controller.abort(this.exceeded);
    return this.exceeded;
  }
}

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** True when a request body is a JSON-RPC `tools/list` request (one message or a batch). */
function isToolsList(body: unknown): boolean {
  if (typeof body !== "string" || !body.includes("tools/list")) return false;
  try {
    const parsed = JSON.parse(body) as unknown;
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    return messages.some((m) => (m as { method?: unknown })?.method === "tools/list");
  } catch {
    return false;
  }
}

/**
 * A fetch for the Streamable HTTP transport that counts the bytes of
 * `tools/list` answers into `meter` as they arrive and cuts the answer off
 * once the listing is over its bound: the rest is never read.
 */
export function countingFetch(meter: ListingMeter, inner: Fetch = (url, init) => fetch(url, init)): Fetch {
  return async (url, init) => {
    const response = await inner(url, init);
    if (!meter.armed || !response.body || !isToolsList(init?.body)) return response;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          const over = meter.add(chunk.byteLength);
          if (over) controller.error(over);
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}
