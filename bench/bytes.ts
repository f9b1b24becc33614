/**
 * Bytes to Redis per step, alone and broken down: the TCP / 100-agent case
 * of `npm run bench` (bench/agent.ts, 400 agents × 5 turns, a warm-up turn
 * per loop first) on a private redis-server, with every script call the
 * store sends recorded on its way out (the client's `evalsha`), so each
 * RESP byte is charged to a script, and within a commit to an argument,
 * a tail section or an event type.
 *
 *   npx tsx bench/bytes.ts              # prints the breakdown per step
 *
 * The total is Redis' own count (`INFO stats` total_net_input_bytes, the
 * figure of the bench's "bytes to Redis per step"); the recorded calls
 * should account for nearly all of it (the rest: the bell subscriber, INFO).
 * Options (environment): BYTES_TURNS (default 2000), BYTES_CONCURRENCY
 * (default 100).
 */
import process from "node:process";
import { Redis } from "ioredis";
import { createGatehouse } from "../mod.ts";
import { redisStore } from "../redis.ts";
import { startRedisServer } from "../tests/helpers/redis-server.ts";
import { createHash } from "node:crypto";
import { scripts, type ScriptName } from "../store/lua/scripts.gen.ts";
import { COMMIT } from "../store/lua/args/turn-protocol.ts";
import { unwire } from "../store/script/wire.ts";
import { benchAgent, STEPS_PER_TURN } from "./agent.ts";
import { countingStore } from "./counting-store.ts";
import { commandStats, diffStats } from "./redis-info.ts";
import { enqueueAll, TURNS_PER_AGENT } from "./throughput.ts";

const TURNS = Math.max(TURNS_PER_AGENT, Number(process.env.BYTES_TURNS ?? 2000));
const CONCURRENCY = Math.max(1, Number(process.env.BYTES_CONCURRENCY ?? 100));

const utf8 = new TextEncoder();
const bulk = (s: string) => {
  const n = utf8.encode(s).byteLength;
  return 1 + String(n).length + 2 + n + 2;
};

/** Bytes by label, over the measured window. */
class Tally {
  readonly by = new Map<string, { bytes: number; n: number }>();
  add(label: string, bytes: number) {
    const t = this.by.get(label) ?? { bytes: 0, n: 0 };
    t.bytes += bytes;
    t.n++;
    this.by.set(label, t);
  }
}

/** The label of one event tail (`"type":...,"data":{...}}`): its type, a step's phase, compact or whole. */
function eventLabel(tail: string): string {
  const e = JSON.parse("{" + unwire(tail)) as { type: string; data: Record<string, unknown> };
  let label = e.type;
  if (e.type === "step") label += `:${String(e.data.phase)}`;
  if (e.type === "transition") label += `:${String((e.data.event as { type?: string })?.type)}`;
  if (typeof e.data.ref === "number") label += " (ref)";
  return `event ${label}`;
}

/** Charges one commit's arguments (store/lua/args/turn-protocol.ts COMMIT) to their names and tail sections. */
function chargeCommit(t: Tally, keys: string[], argv: string[]) {
  for (const k of keys) t.add("commit keys", bulk(k));
  const named = COMMIT.argv.length;
  for (let i = 0; i < named; i++) t.add(`commit ${COMMIT.argv[i]}`, bulk(argv[i]));
  const [nRec, nRes, nMsg, nEv] = [14, 15, 16, 17].map((i) => Number(argv[i]));
  let at = named;
  for (let i = 0; i < nRec; i++, at += 3) t.add("commit record call (id, JSON, deadline)", bulk(argv[at]) + bulk(argv[at + 1]) + bulk(argv[at + 2]));
  for (let i = 0; i < nRes; i++, at += 2) t.add("commit resolve call (id, JSON)", bulk(argv[at]) + bulk(argv[at + 1]));
  for (let i = 0; i < nMsg; i++, at++) {
    const role = (JSON.parse(unwire(argv[at])) as { role?: string }).role;
    t.add(`commit message ${role}`, bulk(argv[at]));
  }
  for (let i = 0; i < nEv; i++, at++) t.add(eventLabel(argv[at]), bulk(argv[at]));
  for (const name of ["retention", "summary", "chain", "stop at cancel"]) t.add(`commit ${name}`, bulk(argv[at++] ?? ""));
}

async function main() {
  const server = await startRedisServer();
  const info = new Redis(server.url);
  const client = new Redis(server.url, { enableAutoPipelining: false });
  const names = new Map<string, ScriptName>();
  for (const name of Object.keys(scripts) as ScriptName[]) names.set(createHash("sha1").update(scripts[name]).digest("hex"), name);
  const tally = new Tally();
  let recording = false;
  const samples: Array<{ keys: string[]; argv: string[] }> = [];
  const evalsha = client.evalsha.bind(client) as (...a: unknown[]) => Promise<unknown>;
  (client as unknown as { evalsha: (...a: unknown[]) => Promise<unknown> }).evalsha = (sha: unknown, n: unknown, ...rest: unknown[]) => {
    if (recording) {
      const name = names.get(String(sha)) ?? "?";
      const all = rest.map(String);
      const keys = all.slice(0, Number(n));
      const argv = all.slice(Number(n));
      // `*<n>\r\n`, then EVALSHA, the sha, numkeys, keys and arguments as bulk strings.
      const head = 1 + String(3 + all.length).length + 2 + bulk("EVALSHA") + bulk(String(sha)) + bulk(String(n));
      tally.add(`call ${name}`, head + all.reduce((s, a) => s + bulk(a), 0));
      if (name === "commit") {
        tally.add("commit command header (EVALSHA, sha, numkeys)", head);
        chargeCommit(tally, keys, argv);
        if (samples.length < 4) samples.push({ keys, argv });
      }
    }
    return evalsha(sha, n, ...rest);
  };
  try {
    const counted = countingStore(redisStore({ client, prefix: "bytes" }));
    const { agent, modelSteps } = benchAgent();
    const gh = createGatehouse({ agents: [agent], store: counted.store, concurrency: CONCURRENCY, leaseMs: 30_000, pollMs: 100 });
    await enqueueAll(counted.store, "w", CONCURRENCY, 1);
    gh.startWorker();
    await counted.whenTurnsEnded(CONCURRENCY);
    await gh.stopWorker();

    const agents = Math.max(CONCURRENCY, TURNS / TURNS_PER_AGENT);
    await enqueueAll(counted.store, "m", agents, TURNS / agents);
    counted.reset();
    const s0 = modelSteps();
    const before = await commandStats(info);
    recording = true;
    gh.startWorker();
    await counted.whenTurnsEnded(TURNS);
    await gh.stopWorker();
    recording = false;
    const after = await commandStats(info);
    const steps = modelSteps() - s0;
    if (steps !== TURNS * STEPS_PER_TURN) throw new Error(`expected ${TURNS * STEPS_PER_TURN} steps, counted ${steps}`);
    const d = diffStats(before, after);
    const per = (b: number) => (b / steps).toFixed(1).padStart(8);
    console.log(`${steps} steps, ${CONCURRENCY} agents in parallel, TCP`);
    console.log(`bytes to Redis per step (INFO total_net_input_bytes): ${(d.netInputBytes / steps).toFixed(0)}`);
    const rows = [...tally.by.entries()];
    const show = (prefix: string) =>
      rows.filter(([k]) => k.startsWith(prefix)).sort((a, b) => b[1].bytes - a[1].bytes)
        .forEach(([k, v]) => console.log(`${per(v.bytes)}  ${(v.n / steps).toFixed(2).padStart(5)}/step  ${k}`));
    console.log("\nper script call (bytes/step, calls/step):");
    show("call ");
    console.log("\nwithin commits (bytes/step, items/step):");
    show("commit ");
    show("event ");
    if (process.env.BYTES_SAMPLES === "1") for (const s of samples) console.log(JSON.stringify(s, null, 1));
    await counted.store.close();
  } finally {
    info.disconnect();
    client.disconnect();
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
