/**
 * Two deployments with disjoint definition sets on one real Redis and one
 * prefix (store/port.ts invariant `definition-sets`, actors/pool/definition-sets.ts): a worker
 * claims only agents it has a definition for, so a task for B's agent is run
 * by B at once, even while A's pool polls the same queue (A never takes the
 * agent and never holds its lease); and a pool that starts on a prefix where
 * another definition set is recorded logs a warning naming both sets.
 */
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, type Gatehouse, type Logger, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../store/redis.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { jsonRequest } from "../helpers/http.ts";

const server = useRedisServer({}, 60_000);
let n = 0;

type Line = { level: string; msg: string; fields?: Record<string, unknown> };
function recordingLogger(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => void lines.push({ level, msg, fields });
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

const answering = () => scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: "ok" } }] }]);
const LEASE_MS = 30_000;

function deployment(prefix: string, names: string[]) {
  const logger = recordingLogger();
  const agents = names.map((name) => defineAgent({ name, instructions: "Answer.", model: answering() }));
  const gh = createGatehouse({
    agents,
    store: redisStore({ url: server.url, prefix }),
    logger,
    leaseMs: LEASE_MS,
    pollMs: 20,
    idlePollMaxMs: 100,
  });
  return { gh, logger };
}

async function post(gh: Gatehouse, agentId: string, agent: string): Promise<string> {
  const res = await gh.fetch(jsonRequest("POST", `/v1/agents/${agentId}/tasks`, { agent, input: "hi" }));
  expect(res.status).toBe(202);
  return ((await res.json()) as { turnId: string }).turnId;
}

async function waitFor<T>(what: string, f: () => Promise<T | undefined | null | false>, ms: number): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("two deployments on one Redis prefix", () => {
  it("a task for B's agent is run by B well under the lease while A's pool polls the same queue", async () => {
    const prefix = `shared${++n}x${Date.now() % 100000}`;
    const a = deployment(prefix, ["alpha"]);
    const b = deployment(prefix, ["beta"]);
    try {
      a.gh.startWorker();
      // Enqueued through B while only A's pool runs: A hears the bell and polls; it must leave the agent alone.
      const turnId = await post(b.gh, "b1", "beta");
      await new Promise((r) => setTimeout(r, 1_000));
      const head = (await b.gh.store.getAgent("b1"))!;
      expect(head.leaseOwner).toBeNull();
      expect(head.epoch).toBe(0);
      const started = Date.now();
      b.gh.startWorker();
      await waitFor("beta's turn done", async () => (await b.gh.store.getTurn("b1", turnId))?.status === "done", 20_000);
      // Well under the lease A would have held (30 s); generous for two shared cores.
      expect(Date.now() - started).toBeLessThan(LEASE_MS / 2);
      const events = await b.gh.store.readEvents("b1", 0, 100);
      expect(events.map((e) => e.type)).not.toContain("worker_missing_definition");
      expect(a.logger.lines.filter((l) => l.msg === "agent definition not registered in this worker")).toEqual([]);
      // A's own agent still runs on A.
      const own = await post(a.gh, "a1", "alpha");
      await waitFor("alpha's turn done", async () => (await a.gh.store.getTurn("a1", own))?.status === "done", 20_000);
    } finally {
      await a.gh.close();
      await b.gh.close();
    }
  }, 60_000);

  it("warns at start when the prefix is shared with another definition set, and not for a replica of the same set", async () => {
    const prefix = `sharedw${++n}x${Date.now() % 100000}`;
    const raw = new Redis(server.url);
    // A set's record is its names, then (store/definition-set-form.ts) its versions and formats after a newline.
    const seen = async (set: string) => {
      const all = await raw.hgetall(`${prefix}:defsets`);
      return Number(Object.entries(all).find(([k]) => k.split("\n")[0] === set)?.[1] ?? 0);
    };
    const a = deployment(prefix, ["alpha", "common"]);
    const replica = deployment(prefix, ["common", "alpha"]);
    const b = deployment(prefix, ["beta", "common"]);
    const warned = (l: { lines: Line[] }) => l.lines.filter((x) => x.level === "warn" && x.msg === "store prefix shared with another definition set");
    try {
      a.gh.startWorker();
      const first = await waitFor("A's set recorded", () => seen("alpha,common"), 10_000);
      await new Promise((r) => setTimeout(r, 20));
      replica.gh.startWorker();
      await waitFor("the replica's announcement", async () => (await seen("alpha,common")) > first, 10_000);
      expect(warned(replica.logger)).toEqual([]);
      expect(warned(a.logger)).toEqual([]);
      b.gh.startWorker();
      const lines = await waitFor("B's warning", async () => warned(b.logger).length > 0 && warned(b.logger), 10_000);
      expect(lines).toHaveLength(1);
      expect(lines[0].fields).toMatchObject({
        agents: ["beta", "common"],
        otherAgents: ["alpha", "common"],
        onlyHere: ["beta"],
        onlyThere: ["alpha"],
      });
    } finally {
      raw.disconnect();
      await a.gh.close();
      await replica.gh.close();
      await b.gh.close();
    }
  }, 60_000);
});
