/**
 * Poison handling (actors/pool/claim-failure.ts) on the memory store and on
 * Redis: a turn whose claims throw ends `failed` (`claim_error`) after
 * `maxClaimFailures` attempts and the tasks behind it run; a store outage
 * counts nothing; an operator reset ends a turn that cannot end by itself.
 * Also the poison of the original report: a deeply nested task is refused
 * with 400 and cannot wedge the agent.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import type { Gatehouse, Store } from "../../mod.ts";
import { manualClock } from "../helpers/clock.ts";
import { useRedisServer } from "../helpers/redis.ts";

const ask = defineTool({ name: "ask_human", description: "Ask a human", parameters: z.object({ q: z.string() }) });

function agent() {
  return defineAgent({
    name: "helper",
    instructions: "Answer.",
    model: scriptedModel((ctx) => {
      const input = ctx.messages.filter((m) => m.role === "user").at(-1)?.content ?? "";
      if (input.includes("ask") && ctx.step === 1) return { toolCalls: [{ name: "ask_human", args: { q: "?" } }] };
      return { toolCalls: [{ name: "submit_result", args: { result: `did ${input.slice(0, 20)}` } }] };
    }),
    tools: [ask],
  });
}

/**
 * Wraps a store so that every commit of a turn whose task input says
 * `"poison"` throws `error()` (an unexpected error out of the claim, the
 * shape of the reported stack overflow), and `outages` more commits of any
 * turn throw a connection error first.
 */
function faultyStore(inner: Store, opts: { error?: () => Error; outages?: number } = {}): Store & { commitsRefused: number } {
  const poison = new Set<string>();
  let outages = opts.outages ?? 0;
  const s = Object.create(inner) as Store & { commitsRefused: number };
  s.commitsRefused = 0;
  s.enqueueTask = async (req) => {
    const r = await inner.enqueueTask(req);
    if (r.status === "enqueued" && JSON.stringify(req.input).includes("poison")) poison.add(r.turnId);
    return r;
  };
  s.commit = async (req) => {
    if (outages > 0) {
      outages--;
      s.commitsRefused++;
      throw new Error("Connection is closed.");
    }
    if (req.turnId !== null && poison.has(req.turnId)) {
      s.commitsRefused++;
      throw (opts.error ?? (() => new RangeError("Maximum call stack size exceeded")))();
    }
    return inner.commit(req);
  };
  return s;
}

interface Env {
  name: string;
  store(): Promise<Store>;
}

const server = useRedisServer();
let n = 0;

const ENVS: Env[] = [
  { name: "memory", store: async () => memoryStore() },
  { name: "redis", store: async () => redisStore({ url: server!.url, prefix: `cf${++n}_${Math.random().toString(36).slice(2, 7)}` }) },
];

function setup(store: Store, extra: Record<string, unknown> = {}) {
  const clock = manualClock();
  const gh = createGatehouse({ agents: [agent()], store, clock, maxClaimFailures: 3, claimRetryBackoffMs: 1_000, leaseMs: 30_000, ...extra });
  const call = (method: string, path: string, body?: unknown) =>
    gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
  return { gh, clock, call };
}

async function enqueue(call: ReturnType<typeof setup>["call"], input: string, agentId = "a1"): Promise<string> {
  const res = await call("POST", `/v1/agents/${agentId}/tasks`, { agent: "helper", input });
  expect(res.status).toBe(202);
  return ((await res.json()) as { turnId: string }).turnId;
}

/** Drains, moving the clock past every backoff and lease, until nothing changes. */
async function settle(gh: Gatehouse, clock: ReturnType<typeof manualClock>, rounds = 12) {
  for (let i = 0; i < rounds; i++) {
    await gh.drain();
    clock.advance(40_000);
  }
  await gh.drain();
}

for (const env of ENVS) {
  describe(`claim failures: ${env.name}`, () => {
    it("a turn whose claims keep throwing ends failed (claim_error) after maxClaimFailures, and the next task runs", async () => {
      const store = faultyStore(await env.store());
      const { gh, clock, call } = setup(store);
      const bad = await enqueue(call, "poison");
      const good = await enqueue(call, "fine");
      await settle(gh, clock);

      expect(store.commitsRefused).toBe(3);
      const events = await gh.store.readEvents("a1", 0, 1000);
      const failures = events.filter((e) => e.type === "claim_failed");
      expect(failures.map((e) => [e.turnId, e.data.attempt, e.data.maxAttempts])).toEqual([[bad, 1, 3], [bad, 2, 3], [bad, 3, 3]]);
      expect(failures[0].data.error).toMatch(/RangeError: Maximum call stack/);
      // Backoff: 1 s after the first failure, 2 s after the second, none after the last.
      expect(failures.map((e) => (e.data.retryAt === null ? null : (e.data.retryAt as number) - e.at))).toEqual([1_000, 2_000, null]);
      const tasks = events.filter((e) => e.type === "task");
      expect(tasks.map((e) => [e.turnId, e.data.status])).toEqual([[bad, "failed"], [good, "done"]]);
      expect(tasks[0].data.error).toMatchObject({ reason: "claim_error" });
      const ended = events.find((e) => e.type === "transition" && e.turnId === bad && (e.data.event as { type: string }).type === "TURN_FAILED");
      expect(ended?.data).toMatchObject({ to: "failed", event: { reason: "claim_error", turnId: bad } });

      const view = await (await call("GET", "/v1/agents/a1")).json() as Record<string, unknown>;
      expect(view).toMatchObject({ state: "done" });
      await gh.close();
    });

    it("a store outage during a claim counts nothing: the claim is retried after the lease and the turn completes", async () => {
      const store = faultyStore(await env.store(), { outages: 2 });
      const { gh, clock, call } = setup(store, { maxClaimFailures: 1 });
      const turn = await enqueue(call, "fine");
      await settle(gh, clock);
      const events = await gh.store.readEvents("a1", 0, 1000);
      expect(store.commitsRefused).toBe(env.name === "memory" ? 1 : 2);
      if (env.name === "memory") {
        // The memory store cannot be unreachable: whatever it throws repeats, so it counts (maxClaimFailures 1).
        expect(events.filter((e) => e.type === "task").map((e) => [e.turnId, e.data.status])).toEqual([[turn, "failed"]]);
      } else {
        expect(events.filter((e) => e.type === "claim_failed")).toEqual([]);
        expect(events.filter((e) => e.type === "task").map((e) => [e.turnId, e.data.status])).toEqual([[turn, "done"]]);
      }
      await gh.close();
    });

    it("POST /reset ends a turn that waits forever, refuses its late tool result, and the next task runs", async () => {
      const { gh, call } = setup(await env.store());
      const stuck = await enqueue(call, "ask");
      const next = await enqueue(call, "after");
      await gh.drain();
      const callId = (await gh.store.readEvents("a1", 0, 1000)).find((e) => e.type === "tool_call" && e.data.external)!.data.toolCallId;
      expect((await (await call("GET", "/v1/agents/a1")).json() as { state: string }).state).toBe("waiting-tools");

      const res = await call("POST", "/v1/agents/a1/reset", { reason: "stuck" });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ reset: true, turnId: stuck });
      await gh.drain();

      const events = await gh.store.readEvents("a1", 0, 1000);
      const tasks = events.filter((e) => e.type === "task");
      expect(tasks.map((e) => [e.turnId, e.data.status])).toEqual([[stuck, "failed"], [next, "done"]]);
      expect(tasks[0].data.error).toEqual({ reason: "reset", message: "stuck" });
      // The open call got an answer in the conversation before the next turn's model call.
      const msgs = await gh.store.readMessages("a1");
      expect(msgs.find((m) => m.role === "tool" && m.toolCallId === callId)?.content).toContain("reset");
      const late = await call("POST", "/v1/agents/a1/tool-results", { turnId: stuck, toolCallId: callId, outcome: { ok: true, value: "late" } });
      expect(late.status).toBe(409);
      expect(((await late.json()) as { code: string }).code).toBe("turn_finished");

      const idle = await call("POST", "/v1/agents/a1/reset");
      expect(idle.status).toBe(409);
      expect(((await idle.json()) as { code: string }).code).toBe("not_active");
      const unknown = await call("POST", "/v1/agents/nobody/reset");
      expect(unknown.status).toBe(404);
      await gh.close();
    });

    it("a task nested deeper than the limit is refused with 400 and writes nothing; one at the limit runs, and so do the tasks behind it", async () => {
      const { gh, clock, call } = setup(await env.store());
      const nest = (depth: number) => "[".repeat(depth) + "\"x\"" + "]".repeat(depth);
      // The body object is one level, `input` an object another: 62 arrays inside reach depth 64.
      const body = (depth: number) => `{"agent":"helper","input":{"deep":${nest(depth)}}}`;
      const post = (text: string) =>
        gh.fetch(new Request("http://gh.test/v1/agents/a1/tasks", { method: "POST", headers: { "content-type": "application/json" }, body: text }));
      for (const depth of [63, 2_500, 100_000]) {
        const res = await post(body(depth));
        expect(res.status).toBe(400);
        expect(res.headers.get("content-type")).toBe("application/problem+json");
        expect(await res.json()).toMatchObject({ code: "json_limit_exceeded", limit: "depth", max: 64 });
      }
      expect(await gh.store.getAgent("a1")).toBeNull();
      const atLimit = await post(body(62));
      expect(atLimit.status).toBe(202);
      const after = await enqueue(call, "fine");
      await settle(gh, clock, 2);
      const tasks = (await gh.store.readEvents("a1", 0, 1000)).filter((e) => e.type === "task");
      expect(tasks.map((e) => e.data.status)).toEqual(["done", "done"]);
      expect(tasks[1].turnId).toBe(after);
      await gh.close();
    });
  });
}
