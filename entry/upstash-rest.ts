/**
 * An Upstash-compatible REST server in front of a Redis (TCP, ioredis): what
 * `gatehouse dev-redis-http` serves (entry/dev-redis-http.ts), and what the
 * tests and benchmarks run upstashStore() against (tests/helpers/upstash-bridge.ts).
 * It speaks what @upstash/redis sends:
 *
 * - `POST /` with one command as a JSON array (`["SET","k","v"]`) ->
 *   `{ "result": ... }`, or HTTP 400 `{ "error": "ERR ..." }`;
 * - `POST /pipeline` with an array of commands -> `[{ "result" } | { "error" }, ...]`;
 * - `POST /multi-exec` the same, run inside MULTI/EXEC;
 * - `Authorization: Bearer <token>` (401 `{ "error" }` otherwise);
 * - `Upstash-Encoding: base64`: every bulk string of a result is base64
 *   (status "OK" stays as is, integers stay numbers, nil is null);
 * - `POST /subscribe/<channel>` (what @upstash/redis's `subscribe()` sends,
 *   `Accept: text/event-stream`) -> an SSE stream on a Redis connection of its
 *   own: `data: subscribe,<channel>,1` once subscribed, then
 *   `data: message,<channel>,<message>` per message, until the client closes
 *   it (store/upstash-live.ts).
 *
 * Anything else is answered with a JSON `{ "error" }`: 405 for another
 * method, 404 for another path, 400 for a body that is not JSON or not a
 * command list. Development only: no TLS, no rate limits, one token.
 *
 * Hooks (for tests): `onRequest` sees every HTTP request; `afterCommands`
 * sees a request's commands after they ran and may answer "drop": the
 * connection is closed without a response, as a network failure after the
 * commands were applied would.
 */
import { Buffer } from "node:buffer";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Redis } from "ioredis";

export interface UpstashRestOptions {
  /** The Redis to forward to, e.g. `redis://127.0.0.1:6379`. */
  redisUrl: string;
  /** Bearer token clients must send. */
  token: string;
  /** Port to listen on (default 0: any free port). */
  port?: number;
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  onRequest?: () => void;
  afterCommands?: (commands: string[][]) => "drop" | void;
  /** An ioredis client to use instead of one opened from `redisUrl` (closed with the server either way). */
  redis?: Redis;
}

export interface UpstashRestServer {
  /** Base URL, e.g. `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly token: string;
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

async function runOne(redis: Redis, cmd: string[]): Promise<Reply> {
  try {
    const [name, ...args] = cmd;
    return { result: await redis.callBuffer(name!, ...args) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

async function runMulti(redis: Redis, cmds: string[][]): Promise<Reply[]> {
  const m = redis.multi();
  for (const [name, ...args] of cmds) m.callBuffer(name!, ...args);
  try {
    const out = (await m.exec()) ?? [];
    return out.map(([err, result]) => (err ? { error: err.message } : { result }));
  } catch (err) {
    return cmds.map(() => ({ error: (err as Error).message }));
  }
}

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function handle(o: UpstashRestOptions, redis: Redis, req: IncomingMessage, res: ServerResponse) {
  o.onRequest?.();
  if (req.method !== "POST") return send(res, 405, { error: "Only POST is supported" });
  if (req.headers.authorization !== `Bearer ${o.token}`) return send(res, 401, { error: "Unauthorized" });
  const path = (req.url ?? "/").split("?")[0]!.replace(/\/+$/, "");
  if (path.startsWith("/subscribe/")) return subscribe(redis, req, res, decodeURIComponent(path.slice("/subscribe/".length)));
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
  const replies = path === "/multi-exec" ? await runMulti(redis, commands) : await Promise.all(commands.map((c) => runOne(redis, c)));
  if (o.afterCommands?.(commands) === "drop") {
    // The commands ran; the client never learns it.
    req.socket.destroy();
    return;
  }
  const encoded = replies.map((r) => ("error" in r ? r : { result: encode(r.result, base64) }));
  if (single) {
    const r = encoded[0]!;
    return send(res, "error" in r ? 400 : 200, r);
  }
  send(res, 200, encoded);
}

/** `POST /subscribe/<channel>`: the channel's messages as SSE lines, on a connection of its own. */
async function subscribe(redis: Redis, req: IncomingMessage, res: ServerResponse, channel: string) {
  await readBody(req);
  if (channel === "" || /[\r\n]/.test(channel)) return send(res, 400, { error: "ERR bad channel name" });
  const sub = redis.duplicate({ lazyConnect: false, enableOfflineQueue: true });
  sub.on("error", () => {});
  const close = () => sub.disconnect();
  req.on("close", close);
  res.on("close", close);
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  // A message with a line break would split its SSE line: it is sent with the break escaped as JSON would.
  sub.on("message", (ch: string, msg: string) => res.write(`data: message,${ch},${msg.replace(/\r?\n/g, "\\n")}\n\n`));
  try {
    await sub.subscribe(channel);
    res.write(`data: subscribe,${channel},1\n\n`);
  } catch (err) {
    res.end(`data: error,${channel},${(err as Error).message}\n\n`);
  }
}

/** Listens (rejecting with the listen error, e.g. EADDRINUSE) and forwards to Redis. */
export async function startUpstashRest(o: UpstashRestOptions): Promise<UpstashRestServer> {
  const redis = o.redis ?? new Redis(o.redisUrl, { enableAutoPipelining: false });
  const server = createServer((req, res) => {
    handle(o, redis, req, res).catch((err) => send(res, 500, { error: `ERR bridge failure: ${(err as Error).message}` }));
  });
  const host = o.host ?? "127.0.0.1";
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(o.port ?? 0, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    redis.disconnect();
    throw err;
  }
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://${host.includes(":") ? `[${host}]` : host}:${port}`,
    token: o.token,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      redis.disconnect();
    },
  };
}
