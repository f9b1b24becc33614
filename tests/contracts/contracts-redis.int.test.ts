/**
 * Contracts and the tool registry on Redis (TCP) and Upstash (REST through
 * tests/helpers/upstash-bridge.ts), each against its own redis-server: the drift
 * scenario through the host (the registry persisted by the script, one
 * `interface_overlap`, the hint in the next prompt), a contract violation
 * posted over HTTP, the registry read by a second process's store, and
 * `gatehouse interfaces --role` run as a process against the same Redis.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, type ModelRequest, type Store, upstashStore } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";

const server = useRedisServer();
let bridge: UpstashBridge;
beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: server.url });
});
afterAll(async () => {
  await bridge?.close();
});

let n = 0;
const adapters: Array<[string, (prefix: string) => Store]> = [
  ["redis", (prefix) => redisStore({ url: server.url, prefix })],
  ["upstash", (prefix) => upstashStore({ url: bridge.url, token: bridge.token, prefix })],
];

const fetcher = (name: string) =>
  defineTool({
    name, role: "web_fetcher", description: "Fetch", parameters: z.object({ url: z.string() }),
    deliverable: { type: "object", required: ["body"] }, execute: ({ url }) => ({ Body: `<p>${url}</p>` }),
  });
const lookup = defineTool({ name: "lookup_user", description: "Look up", parameters: z.object({ email: z.string() }), deliverable: { type: "object", required: ["userId"] } });

function agent(requests: ModelRequest[]) {
  return defineAgent({
    name: "drift",
    instructions: "Fetch.",
    model: {
      name: "test",
      async generate(req) {
        requests.push(req);
        const turn = req.messages.slice(req.messages.findLastIndex((m) => m.role === "user"));
        const tools = turn.filter((m) => m.role === "tool").length;
        const task = turn[0].content;
        if (tools === 0) return { toolCalls: [{ name: task === "lookup" ? "lookup_user" : task, args: task === "lookup" ? { email: "a@b" } : { url: "u" } }] };
        return { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] };
      },
    },
    tools: [fetcher("fetch_url"), fetcher("fetch"), lookup],
  });
}

for (const [name, open] of adapters) {
  describe(`contracts on ${name}`, () => {
    it("persists methods through the script, raises one overlap, hints the next prompt, checks posted results", async () => {
      const prefix = `c${++n}_${name}`;
      const requests: ModelRequest[] = [];
      const gh = createGatehouse({ agents: [agent(requests)], store: open(prefix) });
      const post = (path: string, body: unknown) =>
        gh.app.request(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      try {
        for (const input of ["fetch_url", "fetch"]) {
          expect((await post("/v1/agents/d1/tasks", { agent: "drift", input })).status).toBe(202);
          await gh.drain();
        }
        const events = await gh.store.readEvents("d1", 0, 1000);
        expect(events.filter((e) => e.type === "interface_overlap").map((e) => e.data.overlaps)).toEqual([[{ methods: ["fetch_url", "fetch"], kind: "prefix" }]]);
        expect(requests.at(-1)!.messages[0].content).toContain('<interface_overlap role="web_fetcher">');
        // Another client on the same data reads what the script stored.
        const other = open(prefix);
        expect(await other.getToolRole("web_fetcher")).toMatchObject({ methods: ["fetch_url", "fetch"], aliases: [], calls: 2 });
        await other.close();

        const r = await post("/v1/agents/d1/tasks", { agent: "drift", input: "lookup" });
        const { turnId } = await r.json() as { turnId: string };
        await gh.drain();
        const call = (await gh.store.getToolCalls("d1", turnId))[0];
        const d = await post("/v1/agents/d1/tool-results", { turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: { name: "x" } } });
        expect(await d.json()).toEqual({ accepted: true, duplicate: false, contract: { passed: false, mismatch: "missing_required_key" } });
        expect((await gh.store.getToolCalls("d1", turnId))[0]).toMatchObject({
          outcome: { ok: false, error: { type: "contract_violation" } },
          contractValidation: { applied: true, passed: false, mismatch: "missing_required_key", expectedKeys: ["userId"], actualKeys: ["name"] },
        });
        await gh.drain();
        expect((await gh.store.getAgent("d1"))!.state).toBe("done");
      } finally {
        await gh.close();
      }
    });
  });
}

describe("gatehouse interfaces (the CLI process) against Redis", () => {
  it("prints a role's methods, aliases and overlaps; exit 1 for an unknown role", async () => {
    const prefix = `cli${++n}`;
    const store = redisStore({ url: server.url, prefix });
    for (const m of ["fetch_url", "fetchUrl", "fetch"]) await store.recordToolMethod({ role: "web_fetcher", method: m, now: 1_700_000_000_000 });
    await store.close();
    const run = (args: string[]) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const p = spawn(process.execPath, ["--import", "tsx", "entry/cli.ts", "interfaces", ...args], {
          cwd: new URL("../..", import.meta.url).pathname,
          env: { ...process.env, GATEHOUSE_REDIS_URL: server.url, GATEHOUSE_REDIS_PREFIX: prefix, UPSTASH_REDIS_REST_URL: "" },
        });
        let out = "";
        let err = "";
        p.stdout.on("data", (c) => (out += c));
        p.stderr.on("data", (c) => (err += c));
        p.on("close", (code) => resolve({ code, out, err }));
      });
    const ok = await run(["--role", "web_fetcher"]);
    expect(ok).toEqual({
      code: 0, err: "",
      out: "role web_fetcher: 3 successful calls\n  methods:  fetch_url, fetch\n  aliases:  fetchUrl -> fetch_url\n  overlaps: fetch_url / fetchUrl (alias); fetch_url / fetch (prefix)\n",
    });
    const missing = await run(["--role", "parser"]);
    expect([missing.code, missing.err]).toEqual([1, 'gatehouse interfaces: the tool registry has no role "parser"\n']);
  }, 30_000);
});
