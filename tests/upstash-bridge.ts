/**
 * An Upstash-compatible REST server in front of a real Redis, for tests and
 * benchmarks of upstashStore() without the internet. It speaks what
 * @upstash/redis sends:
 *
 * - `POST /` with one command as a JSON array (`["SET","k","v"]`) ->
 *   `{ "result": ... }`, or HTTP 400 `{ "error": "ERR ..." }`;
 * - `POST /pipeline` with an array of commands -> `[{ "result" } | { "error" }, ...]`;
 * - `POST /multi-exec` the same, run inside MULTI/EXEC;
 * - `Authorization: Bearer <token>` (401 `{ "error" }` otherwise);
 * - `Upstash-Encoding: base64`: every bulk string of a result is base64
 *   (status "OK" stays as is, integers stay numbers, nil is null).
 *
 * Fault hook: `dropResponses(n, match?)` makes the next `n` matching requests
 * run their commands and then close the connection without answering. The
 * client sees a network error and retries a command that already ran, which
 * is how tests prove that a retried applied command causes no duplicate
 * effect.
 *
 * @example
 * const redis = await startRedisServer();
 * const bridge = await startUpstashBridge({ redisUrl: redis.url });
 * const store = upstashStore({ url: bridge.url, token: bridge.token });
 * bridge.dropResponses(1, (cmds) => cmds.some((c) => c[0].toUpperCase() === "EVALSHA"));
 * console.log(bridge.stats.commands, bridge.stats.byName.get("EVALSHA"), bridge.stats.dropped);
 * await bridge.close();
 */
import { Buffer } from "node:buffer";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Redis } from "ioredis";

export interface UpstashBridgeOptions {
  /** The Redis the bridge forwards to, e.g. `redis://127.0.0.1:<port>`. */
  redisUrl: string;
  /** Bearer token clients must send (default "test-token"). */
  token?: string;
}

export interface BridgeStats {
  /** HTTP requests answered or dropped. */
  requests: number;
  /** Redis commands run (each command of a pipeline counts once), as Upstash bills them. */
  commands: number;
  /** Commands run, by upper-case command name. */
  byName: Map<string, number>;
  /** Requests whose response was dropped by the fault hook. */
  dropped: number;
}

export interface UpstashBridge {
  /** Base URL, e.g. `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly token: string;
  readonly stats: BridgeStats;
  /**
   * The next `count` requests for which `match(commands)` is true (default:
   * every request) run their commands, then the connection is closed without
   * a response. `commands` holds the request's commands (one for `POST /`).
   */
  dropResponses(count: number, match?: (commands: string[][]) => boolean): void;
  /** Zeroes the stats. */
  resetStats(): void;
  close(): Promise<void>;
}

type Reply = { result: unknown } | { error: string };

function encode(v: unknown, base64: boolean): unknown {
  if (Buffer.isBuffer(v)) {
    const s = v.toString("utf8");
    if (!base64 || s === "OK") return s;
    return v.toString("base64");
  }
  if (Array.isArray(v)) return v.map((x) => encode(x, base64));
  return v ?? null;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function isCommand(v: unknown): v is Array<string | number> {
  return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === "string" || typeof x === "number");
}

export async function startUpstashBridge(opts: UpstashBridgeOptions): Promise<UpstashBridge> {
  const token = opts.token ?? "test-token";
  const redis = new Redis(opts.redisUrl, { enableAutoPipelining: false });
  const stats: BridgeStats = { requests: 0, commands: 0, byName: new Map(), dropped: 0 };
  const faults: Array<{ left: number; match: (commands: string[][]) => boolean }> = [];

  const count = (cmds: string[][]) => {
    for (const c of cmds) {
      const name = c[0].toUpperCase();
      stats.commands++;
      stats.byName.set(name, (stats.byName.get(name) ?? 0) + 1);
    }
  };

  async function runOne(cmd: string[]): Promise<Reply> {
    try {
      const [name, ...args] = cmd;
      return { result: await redis.callBuffer(name, ...args) };
    } catch (err) {
      return { error: (err as Error).message };
    }
  }

  async function runMulti(cmds: string[][]): Promise<Reply[]> {
    const m = redis.multi();
    for (const [name, ...args] of cmds) m.callBuffer(name, ...args);
    try {
      const out = (await m.exec()) ?? [];
      return out.map(([err, result]) => (err ? { error: err.message } : { result }));
    } catch (err) {
      return cmds.map(() => ({ error: (err as Error).message }));
    }
  }

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };

  const server = createServer(async (req, res) => {
    stats.requests++;
    try {
      if (req.method !== "POST") return send(res, 405, { error: "Only POST is supported" });
      if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, { error: "Unauthorized" });
      const path = (req.url ?? "/").split("?")[0].replace(/\/+$/, "");
      let body: unknown;
      try {
        body = JSON.parse(await readBody(req));
      } catch {
        return send(res, 400, { error: "ERR the request body is not JSON" });
      }
      const base64 = String(req.headers["upstash-encoding"] ?? "").toLowerCase() === "base64";
      const single = path === "";
      if (!single && path !== "/pipeline" && path !== "/multi-exec") return send(res, 404, { error: `Unknown path ${path}` });
      const cmds = (single ? [body] : body) as unknown[];
      if (!Array.isArray(cmds) || cmds.length === 0 || !cmds.every(isCommand)) {
        return send(res, 400, { error: "ERR the body must be a command (array of strings) or an array of commands" });
      }
      const commands = cmds.map((c) => (c as Array<string | number>).map(String));
      const replies = path === "/multi-exec" ? await runMulti(commands) : await Promise.all(commands.map(runOne));
      count(commands);

      const fault = faults.find((f) => f.left > 0 && f.match(commands));
      if (fault) {
        // The commands ran; the client never learns it.
        fault.left--;
        stats.dropped++;
        req.socket.destroy();
        return;
      }
      const encoded = replies.map((r) => ("error" in r ? r : { result: encode(r.result, base64) }));
      if (single) {
        const r = encoded[0];
        return send(res, "error" in r ? 400 : 200, r);
      }
      send(res, 200, encoded);
    } catch (err) {
      send(res, 500, { error: `ERR bridge failure: ${(err as Error).message}` });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;

  return {
    url: `http://127.0.0.1:${port}`,
    token,
    stats,
    dropResponses(n, match = () => true) {
      faults.push({ left: n, match });
    },
    resetStats() {
      stats.requests = 0;
      stats.commands = 0;
      stats.byName.clear();
      stats.dropped = 0;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      redis.disconnect();
    },
  };
}
