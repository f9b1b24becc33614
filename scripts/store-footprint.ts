/**
 * Measures what the Redis store costs per step, for docs/store.md: bytes sent
 * per script call, Redis commands run inside each script, and the size of the
 * head and of the history lists (MEMORY USAGE, HSTRLEN, STRLEN of list
 * entries). Runs the `concierge` example agent (in-process tool, external
 * tool answered over HTTP, submit_result) on a private redis-server.
 *
 *   npx tsx scripts/store-footprint.ts [turns]
 */
import { Redis } from "ioredis";
import { createGatehouse } from "../gatehouse.ts";
import { concierge } from "../examples/demo.ts";
import { scripts } from "../store/lua/scripts.gen.ts";
import { redisStore } from "../redis.ts";
import { sha1Hex } from "../common/hex.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";

const turns = Number(process.argv[2] ?? 5);
const server = await startRedisServer();
const raw = new Redis(server.url);
const client = new Redis(server.url);

const nameOf = new Map<string, string>();
for (const [name, source] of Object.entries(scripts)) nameOf.set(await sha1Hex(source), name);

interface OpStats { calls: number; argBytes: number; inner: number; replyBytes: number }
const ops = new Map<string, OpStats>();
const innerCommands = async () => {
  const info = await raw.info("commandstats");
  let n = 0;
  for (const m of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) {
    if (!["evalsha", "eval", "info", "script"].includes(m[1])) n += Number(m[2]);
  }
  return n;
};

// Serialize script calls and diff the server's command counters around each.
let chain: Promise<unknown> = Promise.resolve();
const evalsha = client.evalsha.bind(client) as (...a: unknown[]) => Promise<unknown>;
(client as unknown as { evalsha: unknown }).evalsha = (sha: string, numkeys: number, ...rest: string[]) => {
  const run = chain.then(async () => {
    const before = await innerCommands();
    const reply = await evalsha(sha, numkeys, ...rest);
    const inner = (await innerCommands()) - before;
    const name = `${nameOf.get(sha) ?? sha} -> ${String(reply).split(" ")[0]}`;
    const s = ops.get(name) ?? { calls: 0, argBytes: 0, inner: 0, replyBytes: 0 };
    s.calls++;
    s.argBytes += rest.reduce((b, a) => b + new TextEncoder().encode(String(a)).length, 0);
    s.inner += inner;
    s.replyBytes += new TextEncoder().encode(String(reply)).length;
    ops.set(name, s);
    return reply;
  });
  chain = run.catch(() => {});
  return run;
};
for (const source of Object.values(scripts)) await raw.script("LOAD", source);

const store = redisStore({ client, prefix: "fp" });
const gh = createGatehouse({ agents: [concierge], store, concurrency: 1 });
const json = { "content-type": "application/json" };
for (let t = 0; t < turns; t++) {
  const r = await gh.fetch(new Request("http://x/v1/agents/a1/tasks", { method: "POST", headers: json, body: JSON.stringify({ agent: "concierge", input: `Refund order A-1001, please (${t})` }) }));
  const { turnId } = (await r.json()) as { turnId: string };
  await gh.drain();
  const ext = (await store.getToolCalls("a1", turnId)).find((c) => c.name === "approve_refund" && c.status === "pending");
  if (!ext) throw new Error("no pending approve_refund call");
  await gh.fetch(new Request("http://x/v1/agents/a1/tool-results", { method: "POST", headers: json, body: JSON.stringify({ turnId, toolCallId: ext.toolCallId, outcome: { ok: true, value: "approved" } }) }));
  await gh.drain();
}
const head = await store.getAgent("a1");

const tag = "fp:{a:a1}";
const listBytes = async (key: string) => {
  const items = await raw.lrange(key, 0, -1);
  const total = items.reduce((b, s) => b + Buffer.byteLength(s), 0);
  return { entries: items.length, avgEntryBytes: Math.round(total / Math.max(1, items.length)), memoryUsage: await raw.memory("USAGE", key) };
};
const report = {
  turns,
  state: head?.state,
  version: head?.version,
  head: {
    memoryUsage: await raw.memory("USAGE", `${tag}:head`),
    encoding: await raw.object("ENCODING", `${tag}:head`),
  },
  snapshot: { bytes: await raw.strlen(`${tag}:head:snapshot`), memoryUsage: await raw.memory("USAGE", `${tag}:head:snapshot`) },
  events: await listBytes(`${tag}:events`),
  messages: await listBytes(`${tag}:msgs`),
  perScriptCall: Object.fromEntries(
    [...ops].sort().map(([name, s]) => [name, {
      calls: s.calls,
      avgArgBytes: Math.round(s.argBytes / s.calls),
      avgInnerCommands: +(s.inner / s.calls).toFixed(1),
      avgReplyBytes: Math.round(s.replyBytes / s.calls),
    }]),
  ),
};
console.log(JSON.stringify(report, null, 2));

await gh.close();
raw.disconnect();
client.disconnect();
await server.stop();
