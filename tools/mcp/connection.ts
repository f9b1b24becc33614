/**
 * One connection to one MCP server, shared by every tool mcpTools() made
 * from it (tools/mcp/tools.ts).
 *
 * Invariants:
 * - At most one client is open or opening at a time; calls made while it
 *   opens wait for the same handshake.
 * - A failure of the connection itself (the transport closed, a network or
 *   HTTP error, a session the server no longer knows) drops the client: the
 *   failed call answers `mcp_unavailable`, retryable, and the next call opens
 *   a new connection. The failed call is never repeated here: whether the
 *   server ran it is unknown, and whether running it again is harmless is
 *   the tool's `retrySafe`, which the host and the model act on.
 * - A response stream that breaks mid-call makes the connection ping the
 *   server; a failed ping counts as a failure of the connection (the waiting
 *   calls answer `mcp_unavailable` at once instead of at their timeout).
 * - On Cloudflare Workers a connection opened while serving one request
 *   cannot be used by another (workerd refuses the I/O before anything is
 *   sent: "Cannot perform I/O on behalf of a different request"). That
 *   refusal reopens the connection in the current request and the call is
 *   made there, once; nothing reached the server the first time.
 * - A call given up through its signal (the worker lost the agent) answers
 *   `mcp_unavailable` and keeps the connection.
 * - An error the server answers (a JSON-RPC error) leaves the connection
 *   open.
 * - `notifications/tools/list_changed` marks the listing stale; the next
 *   call (or `listTools()`) lists again before it runs. One listing runs at
 *   a time; callers that need one while it runs share it.
 * - A listing reads at most `maxTools` tools and `maxListingBytes` bytes
 *   (tools/mcp/limits.ts): paging stops at the page that crosses a bound
 *   and the listing fails with the McpLimitError; over HTTP the answer that
 *   crosses the byte bound is cut off as it arrives (the connection is then
 *   dropped, its stream having been cut).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { jsonBytes, ListingMeter, listingBytesError, McpLimitError, type McpLimits, toolCountError } from "./limits.ts";
import { PASS_THROUGH_VALIDATOR } from "./schema.ts";

/** A tool as the server lists it (the fields gatehouse reads). */
export interface ListedTool {
  name: string;
  title?: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean; destructiveHint?: boolean; title?: string };
}

/** What one `tools/call` answered: the server's result, or why there is none. */
export type CallAnswer =
  | { kind: "result"; result: { content?: unknown[]; structuredContent?: unknown; isError?: boolean } }
  | { kind: "unavailable"; message: string }
  | { kind: "server_error"; code: number; message: string }
  | { kind: "timeout"; message: string };

/** How long a server whose stream broke has to answer a ping before its connection is dropped. */
const PING_TIMEOUT_MS = 10_000;

export class McpConnection {
  private client: Client | undefined;
  private opening: Promise<Client> | undefined;
  private listing: ListedTool[] | undefined;
  private listingRun: Promise<ListedTool[]> | undefined;
  private readonly meter: ListingMeter;
  private stale = true;
  private closed = false;
  /** Connections opened so far (the first one included). */
  opened = 0;

  constructor(
    private readonly label: string,
    private readonly makeTransport: (meter: ListingMeter) => Promise<Transport>,
    private readonly limits: Pick<McpLimits, "maxTools" | "maxListingBytes">,
  ) {
    this.meter = new ListingMeter(label, limits.maxListingBytes);
  }

  /** The server's tools, listed again when the server said its list changed. */
  listTools(): Promise<ListedTool[]> {
    if (!this.stale && this.listing) return Promise.resolve(this.listing);
    this.listingRun ??= this.listFresh().finally(() => {
      this.listingRun = undefined;
    });
    return this.listingRun;
  }

  private async listFresh(): Promise<ListedTool[]> {
    try {
      return await this.list();
    } catch (err) {
      if (!isOtherRequestIo(err)) throw err;
      return await this.list();
    }
  }

  private async list(): Promise<ListedTool[]> {
    const client = await this.open();
    const tools: ListedTool[] = [];
    let cursor: string | undefined;
    let bytes = 0;
    const signal = this.meter.start();
    try {
      do {
        const page = await client.listTools(cursor === undefined ? undefined : { cursor }, { signal });
        // The JSON size counts where the transport does not (stdio); over HTTP the meter counted the bytes read.
        bytes += jsonBytes(page.tools);
        tools.push(...(page.tools as ListedTool[]));
        if (tools.length > this.limits.maxTools) throw toolCountError(this.label, this.limits.maxTools, tools.length);
        const read = Math.max(bytes, this.meter.bytes);
        if (read > this.limits.maxListingBytes) throw listingBytesError(this.label, this.limits.maxListingBytes, read);
        cursor = page.nextCursor;
      } while (cursor !== undefined);
    } catch (err) {
      const cut = this.meter.exceeded;
      if (cut || (isConnectionFailure(err) && !(err instanceof McpLimitError))) await this.drop(client);
      throw cut ?? err;
    } finally {
      this.meter.stop();
    }
    this.listing = tools;
    this.stale = false;
    return tools;
  }

  /** Calls a tool; never throws. */
  async call(name: string, args: unknown, opts: { signal?: AbortSignal; timeoutMs: number }): Promise<CallAnswer> {
    const first = await this.callOnce(name, args, opts);
    // Refused before it was sent (a connection of another Workers request): once more, on a new connection.
    const answer = first.kind === "other_request" ? await this.callOnce(name, args, opts) : first;
    return answer.kind === "other_request" ? { kind: "unavailable", message: `the connection to the MCP server ${this.label} belongs to another request` } : answer;
  }

  private async callOnce(
    name: string,
    args: unknown,
    opts: { signal?: AbortSignal; timeoutMs: number },
  ): Promise<CallAnswer | { kind: "other_request" }> {
    let client: Client;
    try {
      client = await this.open();
    } catch (err) {
      return { kind: "unavailable", message: `cannot connect to the MCP server ${this.label}: ${messageOf(err)}` };
    }
    try {
      const result = await client.callTool({ name, arguments: args as Record<string, unknown> }, undefined, {
        signal: opts.signal,
        timeout: opts.timeoutMs,
      });
      return { kind: "result", result: result as Extract<CallAnswer, { kind: "result" }>["result"] };
    } catch (err) {
      // The worker gave the call up (lease lost, shutdown): the connection itself is fine.
      if (opts.signal?.aborted) return { kind: "unavailable", message: `the call to the MCP server ${this.label} was aborted: ${messageOf(opts.signal.reason ?? err)}` };
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        return { kind: "timeout", message: `the MCP server ${this.label} did not answer within ${opts.timeoutMs} ms` };
      }
      if (!isConnectionFailure(err)) return { kind: "server_error", code: (err as McpError).code, message: messageOf(err) };
      await this.drop(client);
      if (isOtherRequestIo(err)) return { kind: "other_request" };
      return { kind: "unavailable", message: `the connection to the MCP server ${this.label} failed during the call: ${messageOf(err)}` };
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client ?? await this.opening?.catch(() => undefined);
    this.client = undefined;
    this.opening = undefined;
    await client?.close().catch(() => {});
  }

  private open(): Promise<Client> {
    if (this.closed) return Promise.reject(new Error("mcpTools() connection was closed"));
    if (this.client) return Promise.resolve(this.client);
    this.opening ??= this.connect().finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  private async connect(): Promise<Client> {
    const client = new Client({ name: "gatehouse", version: "1" }, { jsonSchemaValidator: PASS_THROUGH_VALIDATOR });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      this.stale = true;
    });
    const transport = await this.makeTransport(this.meter);
    await client.connect(transport);
    // The transport ended (the server process exited, the stream closed): the next call reconnects.
    client.onclose = () => {
      if (this.client === client) this.client = undefined;
    };
    // A response stream that breaks leaves its request waiting for its timeout (the SDK cannot know
    // whether the answer is lost). Ask the server whether it is still there: a server that died or
    // forgot the session fails the ping, and closing the client fails every waiting call at once.
    client.onerror = (err) => {
      if (/SSE stream disconnected|reconnect/i.test(err?.message ?? "")) void this.checkAlive(client);
    };
    this.opened++;
    this.client = client;
    // The listing of an earlier connection may be out of date.
    this.stale = true;
    return client;
  }

  private async checkAlive(client: Client) {
    if (this.client !== client) return;
    try {
      await client.ping({ timeout: PING_TIMEOUT_MS });
    } catch {
      await this.drop(client);
    }
  }

  private async drop(client: Client) {
    if (this.client === client) this.client = undefined;
    await client.close().catch(() => {});
  }
}

/** True unless the server answered with a JSON-RPC error (the connection itself is fine then). */
function isConnectionFailure(err: unknown): boolean {
  return !(err instanceof McpError) || err.code === ErrorCode.ConnectionClosed;
}

/** workerd's refusal to use an I/O object (a stream, a fetch's canceler) of another request. */
function isOtherRequestIo(err: unknown): boolean {
  return /Cannot perform I\/O on behalf of a different request/.test(messageOf(err));
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
