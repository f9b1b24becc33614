/**
 * The Node server (entry/node-server.ts) over real sockets: requests that
 * Node's HTTP parser or the adapter refuse are answered as problem+json with
 * a documented code (never an empty body), a client that disconnects is not
 * logged as an error, and agent ids `.` and `..` are refused everywhere.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AddressInfo } from "node:net";
import { createConnection } from "node:net";
import type { Server } from "node:http";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";
import type { Gatehouse } from "../../mod.ts";
import { createNodeServer } from "../../entry/node-server.ts";
import { AGENT_ID } from "../../routes/schemas.ts";
import { checkAgentId, StoreInputError } from "../../store/keys.ts";
import { PROBLEMS } from "../../routes/problem.ts";

const logs: Array<{ level: string; msg: string; data?: unknown }> = [];
const logger = {
  debug() {},
  info: (msg: string, data?: unknown) => logs.push({ level: "info", msg, data }),
  warn: (msg: string, data?: unknown) => logs.push({ level: "warn", msg, data }),
  error: (msg: string, data?: unknown) => logs.push({ level: "error", msg, data }),
};

let gh: Gatehouse;
let server: Server;
let port: number;
beforeAll(async () => {
  const agent = defineAgent({ name: "echo", instructions: "x", model: scriptedModel([{ text: "ok" }]) });
  gh = createGatehouse({ agents: [agent], logger });
  server = createNodeServer(gh.app.fetch, logger);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await gh.close();
});

/** Sends raw bytes; resolves with everything the server wrote until it closed (or `waitMs` passed). */
function raw(bytes: string, opts: { waitMs?: number; destroyAfterMs?: number } = {}): Promise<string> {
  return new Promise((resolve) => {
    const sock = createConnection({ port, host: "127.0.0.1" }, () => {
      sock.write(bytes);
      if (opts.destroyAfterMs !== undefined) setTimeout(() => sock.destroy(), opts.destroyAfterMs);
    });
    let buf = "";
    sock.on("data", (d) => (buf += d.toString("latin1")));
    sock.on("error", () => {});
    sock.on("close", () => resolve(buf));
    setTimeout(() => sock.destroy(), opts.waitMs ?? 1_000);
  });
}

function parse(response: string) {
  const [head, ...rest] = response.split("\r\n\r\n");
  const status = Number(head.split(" ")[1]);
  const type = /content-type: ([^\r\n]+)/i.exec(head)?.[1];
  let body = rest.join("\r\n\r\n");
  if (/transfer-encoding: chunked/i.test(head)) body = body.replace(/^[0-9a-f]+\r\n/i, "").replace(/\r\n0\r\n\r\n$/, "");
  return { status, type, body: body ? JSON.parse(body) : null };
}

describe("requests Node or the adapter refuse are answered as problem+json", () => {
  const cases: Array<[string, string, number, string]> = [
    ["a Content-Length that is not a number", "POST /v1/agents/a1/tasks HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "bad_request"],
    ["two different Content-Lengths", "POST /v1/agents/a1/tasks HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "bad_request"],
    ["an unknown method", "FOO /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 501, "method_not_implemented"],
    ["a path without a leading slash", "GET nopath HTTP/1.1\r\nHost: x\r\n\r\n", 400, "bad_request"],
    ["a control character in the path", "GET /he\x01althz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "bad_request"],
    ["bytes that are no HTTP", "\x00\x01\x02garbage\r\n\r\n", 400, "bad_request"],
    ["headers over Node's limit", `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431, "headers_too_large"],
    ["`*` as the path", "GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400, "bad_request"],
    ["an invalid Host", "GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "bad_request"],
    ["no Host (HTTP/1.1)", "GET /healthz HTTP/1.1\r\n\r\n", 400, "bad_request"],
  ];
  for (const [what, bytes, status, code] of cases) {
    it(`${what}: ${status} ${code}`, async () => {
      const r = parse(await raw(bytes));
      expect(r.status).toBe(status);
      expect(r.type).toBe("application/problem+json");
      expect(r.body).toMatchObject({ status, code, title: PROBLEMS[code as keyof typeof PROBLEMS].title });
    });
  }

  it("a well-formed request still works", async () => {
    const r = parse(await raw("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, store: "memory" });
  });
});

describe("client disconnects", () => {
  it("an upload the client abandons is not logged as an error and stores nothing", async () => {
    logs.length = 0;
    await raw("POST /v1/agents/gone/tasks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"agent\":", { destroyAfterMs: 50, waitMs: 500 });
    await new Promise((r) => setTimeout(r, 200));
    expect(logs.filter((l) => l.level === "error")).toEqual([]);
    expect(await gh.store.getAgent("gone")).toBeNull();
  });

  it("a connection reset before the request ends is not logged as an error", async () => {
    logs.length = 0;
    await raw("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Partial: ", { destroyAfterMs: 20, waitMs: 300 });
    await new Promise((r) => setTimeout(r, 100));
    expect(logs.filter((l) => l.level === "error")).toEqual([]);
  });
});

describe("agent ids . and ..", () => {
  it("are refused by the route guard's pattern and by the store's key check", () => {
    for (const id of [".", ".."]) {
      expect(AGENT_ID.test(id), id).toBe(false);
      expect(() => checkAgentId(id)).toThrow(StoreInputError);
    }
    for (const id of ["...", ".a", "a.", "a..b", "v1.2"]) expect(AGENT_ID.test(id), id).toBe(true);
  });

  it("cannot be reached over HTTP: the path is normalized away, and an encoded dot segment too", async () => {
    for (const path of ["/v1/agents/./tasks", "/v1/agents/../tasks", "/v1/agents/%2E/tasks", "/v1/agents/%2e%2e/tasks"]) {
      const res = await gh.fetch(new Request(`http://gh.test${path}`, {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "echo", input: "x" }),
      }));
      // `/v1/agents/tasks` is the agent "tasks", which allows no POST; never a 202.
      expect([404, 405], path).toContain(res.status);
      expect(res.headers.get("content-type")).toBe("application/problem+json");
    }
    expect(await gh.store.getAgent(".")).toBeNull();
    expect(await gh.store.getAgent("..")).toBeNull();
  });
});
