/**
 * Records written before lone surrogates were replaced (store/port.ts
 * invariant `well-formed-text`) can hold the escape `\ud800`, which Redis's
 * Lua `cjson.decode` refuses. Such a record must not wedge its agent: the
 * scripts read the escape as U+FFFD (store/lua/includes/head.lua,
 * `decode_stored`), so a queued task runs, and reset, cancel, delete, a
 * queued task's cancel, a tool result, an approval and a claim failure all
 * answer as for plain text.
 *
 * The records are written as such a version wrote them: each test stores
 * plain text holding a marker and then replaces the marker by the escape's
 * six characters in every stored value of the agent, with a raw Redis
 * client, on a real redis-server.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../store/redis.ts";
import type { TurnEnd } from "../../store/port.ts";
import { useRedisServer } from "../helpers/redis.ts";

const server = useRedisServer();
let raw: Redis;
let n = 0;
beforeAll(async () => {
  raw = new Redis(server.url);
});
afterAll(async () => {
  raw?.disconnect();
});

const MARK = "MARK";
const ESCAPE = "\\ud800";
const T0 = 1_700_000_000_000;
const LEASE = 30_000;

/** Replaces MARK by the escape in every stored value (strings, hash values, list items) under `prefix`. */
async function poison(prefix: string): Promise<number> {
  let changed = 0;
  const keys = await raw.keys(`${prefix}*`);
  for (const key of keys) {
    const type = await raw.type(key);
    if (type === "string") {
      const v = (await raw.get(key))!;
      if (v.includes(MARK)) (await raw.set(key, v.replaceAll(MARK, ESCAPE)), changed++);
    } else if (type === "hash") {
      const all = await raw.hgetall(key);
      for (const [f, v] of Object.entries(all)) if (v.includes(MARK)) (await raw.hset(key, f, v.replaceAll(MARK, ESCAPE)), changed++);
    } else if (type === "list") {
      const items = await raw.lrange(key, 0, -1);
      for (let i = 0; i < items.length; i++) if (items[i].includes(MARK)) (await raw.lset(key, i, items[i].replaceAll(MARK, ESCAPE)), changed++);
    }
  }
  return changed;
}

const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({ q: z.string() }) });
const pay = defineTool({ name: "pay", description: "Pay", parameters: z.object({ to: z.string() }), needsApproval: true, execute: async () => "paid" });
const END: TurnEnd = { snapshot: { value: "failed" }, state: "failed", events: [], messages: [] };

function setup() {
  const prefix = `old${++n}x${process.pid}`;
  const clock = { t: T0, now: () => clock.t };
  const helper = defineAgent({
    name: "helper",
    instructions: "",
    model: scriptedModel(() => ({ toolCalls: [{ name: "submit_result", args: { result: "ok" } }] })),
  });
  const copier = defineAgent({
    name: "copier",
    instructions: "",
    model: scriptedModel([{ toolCalls: [{ name: "ask_human", args: { q: `who${MARK}` } }] }, { text: "done" }]),
    tools: [ask],
  });
  const payer = defineAgent({
    name: "payer",
    instructions: "",
    model: scriptedModel([{ toolCalls: [{ name: "pay", args: { to: `x${MARK}` } }] }, { text: "paid" }]),
    tools: [pay],
  });
  const store = redisStore({ url: server.url, prefix });
  const gh = createGatehouse({ agents: [helper, copier, payer], store, clock, maxClaimFailures: 2, claimRetryBackoffMs: 1 });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
    return { status: res.status, body: await res.json() as any };
  };
  const enqueue = (agentId: string, turnId: string, over: Record<string, unknown> = {}) =>
    store.enqueueTask({
      agentId, agentName: "helper", workerTarget: "default", input: { q: `in${MARK}` }, options: {}, turnId,
      idempotencyKey: `key${MARK}${turnId}`, now: clock.t, ...over,
    });
  const status = async (agentId: string, turnId: string) => (await store.getTurn(agentId, turnId))?.status;
  return { prefix, clock, store, gh, call, enqueue, status };
}

describe("records holding a lone-surrogate escape (written before the replacement) on Redis", () => {
  it("a queued task: the worker runs it to its end and the task behind it too", async () => {
    const { prefix, gh, enqueue, status } = setup();
    await enqueue("a1", "turn_1");
    await enqueue("a1", "turn_2", { input: "plain", idempotencyKey: undefined });
    expect(await poison(prefix)).toBeGreaterThan(0);
    await gh.drain();
    expect(await status("a1", "turn_1")).toBe("done");
    expect(await status("a1", "turn_2")).toBe("done");
    await gh.close();
  }, 30_000);

  it("an active turn: reset answers 200, cancel 202 and takes effect, DELETE 200", async () => {
    const { prefix, clock, store, gh, call, enqueue, status } = setup();
    for (const a of ["a1", "a2", "a3"]) {
      await enqueue(a, `turn_${a}`);
      expect((await store.claim({ agentId: a, workerId: "w_old", leaseMs: LEASE, now: clock.t })).status).toBe("claimed");
    }
    expect(await poison(prefix)).toBeGreaterThan(0);
    expect((await call("POST", "/v1/agents/a1/reset", { reason: "stuck" })).status).toBe(200);
    expect(await status("a1", "turn_a1")).toBe("failed");
    expect((await store.getAgent("a1"))?.activeTurnId).toBeNull();
    expect((await call("POST", "/v1/agents/a2/cancel", { reason: "stop" })).status).toBe(202);
    clock.t += LEASE + 1;
    await gh.drain();
    expect(await status("a2", "turn_a2")).toBe("failed");
    expect((await call("DELETE", "/v1/agents/a3")).status).toBe(200);
    expect(await store.getAgent("a3")).toBeNull();
    await gh.close();
  }, 30_000);

  it("a claim failure is recorded and ends the turn failed; a reset of the same record works", async () => {
    const { prefix, clock, store, gh, enqueue, status } = setup();
    await enqueue("a1", "turn_1");
    await enqueue("a2", "turn_2");
    const c1 = await store.claim({ agentId: "a1", workerId: "w1", leaseMs: LEASE, now: clock.t });
    const c2 = await store.claim({ agentId: "a2", workerId: "w1", leaseMs: LEASE, now: clock.t });
    if (c1.status !== "claimed" || c2.status !== "claimed") throw new Error("not claimed");
    await poison(prefix);
    const f = await store.recordClaimFailure({
      agentId: "a1", workerId: "w1", epoch: c1.epoch, expectedVersion: c1.head.version, turnId: "turn_1", error: "boom",
      maxFailures: 1, retryBaseMs: 10, end: END, now: clock.t + 1,
    });
    expect(f.status).toBe("turn_failed");
    expect(await status("a1", "turn_1")).toBe("failed");
    expect((await store.resetTurn({ agentId: "a2", expectedVersion: c2.head.version, turnId: "turn_2", end: END, now: clock.t + 1 })).status)
      .toBe("reset");
    await gh.close();
  }, 30_000);

  it("a delayed task: DELETE …/tasks/:turnId answers 200 and the task is cancelled", async () => {
    const { prefix, clock, gh, call, enqueue, status } = setup();
    await enqueue("a1", "turn_1", { runAt: clock.t + 3_600_000 });
    expect(await poison(prefix)).toBeGreaterThan(0);
    expect((await call("DELETE", "/v1/agents/a1/tasks/turn_1")).status).toBe(200);
    expect(await status("a1", "turn_1")).toBe("cancelled");
    await gh.close();
  }, 30_000);

  it("a tool call's arguments: its result (200) and an approval (200) are taken, and the turns end done", async () => {
    const { prefix, gh, call, status, store } = setup();
    const t1 = (await call("POST", "/v1/agents/a1/tasks", { agent: "copier", input: "go" })).body.turnId;
    const t2 = (await call("POST", "/v1/agents/a2/tasks", { agent: "payer", input: "go" })).body.turnId;
    await gh.drain();
    expect(await poison(prefix)).toBeGreaterThan(0);
    const [c1] = await store.getToolCalls("a1", t1);
    const r = await call("POST", "/v1/agents/a1/tool-results", { turnId: t1, toolCallId: c1.toolCallId, outcome: { ok: true, value: "Ada" } });
    expect(r.status).toBe(200);
    const [c2] = await store.getToolCalls("a2", t2);
    expect((await call("POST", "/v1/agents/a2/approvals", { turnId: t2, toolCallId: c2.toolCallId, approved: true })).status).toBe(200);
    await gh.drain();
    expect(await status("a1", t1)).toBe("done");
    expect(await status("a2", t2)).toBe("done");
    await gh.close();
  }, 30_000);
});
