/**
 * gatehouse inside workerd (Cloudflare Workers' runtime, through Miniflare),
 * on a real Redis behind the Upstash-compatible bridge: the Worker modules in
 * tests/workerd/fixtures are bundled as wrangler would bundle them and run
 * without `nodejs_compat`. Requests go to `fetch`, cron triggers to
 * `scheduled`; the work a request rings runs in `ctx.waitUntil` after its
 * response, so the tests poll the agent's state. A Node-side upstashStore on
 * the same prefix reads what the Worker wrote (leases, events).
 *
 * Node only: it starts redis-server, the bridge and workerd processes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { upstashStore } from "../../mod.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";
import { eventually, type RunningWorker, startWorker } from "../workerd/harness.ts";

const fixture = (name: string) => new URL(`../workerd/fixtures/${name}`, import.meta.url).pathname;
const T = 60_000;

const redis = useRedisServer({}, T);
let bridge: UpstashBridge;
beforeAll(async () => {
  bridge = await startUpstashBridge({ redisUrl: redis.url });
}, T);
afterAll(async () => {
  await bridge?.close();
});

const bindings = (prefix: string, extra: Record<string, string> = {}) => ({
  UPSTASH_REDIS_REST_URL: bridge.url,
  UPSTASH_REDIS_REST_TOKEN: bridge.token,
  GATEHOUSE_REDIS_PREFIX: prefix,
  ...extra,
});

interface View {
  state: string;
  turnId: string;
  output?: unknown;
  pendingToolCalls: Array<{ toolCallId: string; name: string; external: boolean }>;
  verification?: { attemptsUsed: number; lastOutcome: string };
}
async function view(w: RunningWorker, id: string): Promise<View> {
  const r = await w.fetch(`/v1/agents/${id}`);
  if (r.status !== 200) throw new Error(`GET /v1/agents/${id}: ${r.status} ${await r.text()}`);
  return (await r.json()) as View;
}
const inState = (w: RunningWorker, id: string, state: string) =>
  eventually(`${id} in ${state}`, async () => {
    const v = await view(w, id);
    return v.state === state ? v : undefined;
  });
/** Waiting for external calls only: the in-process tools of the step have run (an earlier commit shows them pending). */
const waitingExternal = (w: RunningWorker, id: string, turnId?: string) =>
  eventually(`${id} waiting for an external call`, async () => {
    const v = await view(w, id);
    const ok = v.state === "waiting-tools" && v.pendingToolCalls.length > 0 && v.pendingToolCalls.every((c) => c.external) &&
      (turnId === undefined || v.turnId === turnId);
    return ok ? v : undefined;
  });
const task = (w: RunningWorker, id: string, agent: string, input: unknown, extra: Record<string, unknown> = {}) =>
  w.fetch(`/v1/agents/${id}/tasks`, { method: "POST", json: { agent, input, ...extra } });

describe("workerd: the README scenario, the verifier gate, the watchdog, SSE", () => {
  let w: RunningWorker;
  beforeAll(async () => {
    w = await startWorker(fixture("worker.ts"), {
      bindings: bindings("wd1"),
      define: { GATEHOUSE_TEST: {} },
    });
  }, T);
  afterAll(async () => {
    await w?.dispose();
  });

  it("README scenario: task -> external call pending -> result (twice: duplicate) -> done", async () => {
    const r1 = await task(w, "alice", "concierge", "Refund order A-1001 please", { idempotencyKey: "req-1" });
    expect(r1.status).toBe(202);
    const t = (await r1.json()) as { turnId: string; duplicate: boolean };
    expect(t.duplicate).toBe(false);
    const waiting = await waitingExternal(w, "alice", t.turnId);
    expect(waiting.pendingToolCalls).toMatchObject([{ name: "approve_refund", external: true }]);
    const events = (await (await w.fetch("/v1/agents/alice/events?after=0")).json()) as { events: Array<{ type: string; data: any }> };
    const call = events.events.find((e) => e.type === "tool_call" && e.data.name === "approve_refund");
    expect(call?.data.step).toBe(2);
    const result = { turnId: t.turnId, toolCallId: call!.data.toolCallId, outcome: { ok: true, value: "approved by Dana" } };
    const d1 = await w.fetch("/v1/agents/alice/tool-results", { method: "POST", json: result });
    const d2 = await w.fetch("/v1/agents/alice/tool-results", { method: "POST", json: result });
    expect(await d1.json()).toEqual({ accepted: true, duplicate: false, contract: { passed: true, mismatch: null } });
    expect(await d2.json()).toEqual({ accepted: true, duplicate: true, contract: { passed: true, mismatch: null } });
    const done = await inState(w, "alice", "done");
    expect(done.output).toEqual({ orderId: "A-1001", refund: "approved", note: "approved by Dana" });
    const peek = upstashStore({ url: bridge.url, token: bridge.token, prefix: "wd1" });
    expect((await peek.getAgent("alice"))!.leaseOwner).toBeNull();
  }, T);

  it("a verifier-gated agent is rejected once, revises, and completes with the verifier's output; both verdicts are kept", async () => {
    expect((await task(w, "sam", "summarizer", "Summarize gatehouse")).status).toBe(202);
    const done = await inState(w, "sam", "done");
    expect(done.output).toEqual({ summary: "Gatehouse keeps agents durable.", words: 4, verified: true });
    expect(done.verification).toMatchObject({ attemptsUsed: 2, lastOutcome: "passed" });
    const verdicts = (await (await w.fetch("/v1/agents/sam/verdicts")).json()) as { verdicts: Array<{ status: string }> };
    expect(verdicts.verdicts.map((v) => v.status)).toEqual(["NEEDS_CHANGES", "PASS"]);
  }, T);

  it("scheduled runs the watchdog: an expired external wait becomes a timeout result and the turn finishes", async () => {
    expect((await task(w, "wendy", "waiter", "anyone there?")).status).toBe(202);
    const waiting = await waitingExternal(w, "wendy");
    expect(waiting.pendingToolCalls).toMatchObject([{ name: "wait_human", external: true }]);
    await new Promise((r) => setTimeout(r, 400)); // past the tool's 300 ms resume deadline
    expect((await view(w, "wendy")).state).toBe("waiting-tools"); // nothing but the watchdog moves it
    expect(await w.scheduled()).toMatchObject({ outcome: "ok" });
    const done = await inState(w, "wendy", "done");
    expect(JSON.stringify(done.output)).toContain("timeout");
    const peek = upstashStore({ url: bridge.url, token: bridge.token, prefix: "wd1" });
    const calls = await peek.getToolCalls("wendy", done.turnId);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: "wait_human", source: "watchdog" });
  }, T);

  it("an SSE stream ends after its read budget with retry:, costing maxReads store reads", async () => {
    // A bridge of its own, so its request count is this stream's alone.
    const own = await startUpstashBridge({ redisUrl: redis.url });
    const sw = await startWorker(fixture("worker.ts"), {
      bindings: { UPSTASH_REDIS_REST_URL: own.url, UPSTASH_REDIS_REST_TOKEN: own.token, GATEHOUSE_REDIS_PREFIX: "wd1" },
      define: { GATEHOUSE_TEST: { sse: { pollMs: 20, maxReads: 4, retryMs: 500 } } },
    });
    try {
      expect((await task(sw, "sse1", "summarizer", "Summarize gatehouse")).status).toBe(202);
      await inState(sw, "sse1", "done"); // its log is complete and nothing else reads it
      own.resetStats();
      const res = await sw.fetch("/v1/agents/sse1/events", { headers: { accept: "text/event-stream" } });
      expect(res.headers.get("content-type")).toContain("text/event-stream");
      const text = await res.text(); // the stream ends by itself
      expect(text).toContain("event: task");
      expect(text.endsWith("retry: 500\n: reconnect\n\n")).toBe(true);
      // Exactly maxReads reads (a stream no longer looks the agent up first: it waits for its first event), plus
      // one EVAL when this Redis had not loaded the read script yet (the EVALSHA that found NOSCRIPT is one of the 4).
      const evals = own.stats.byName.get("EVAL") ?? 0;
      expect(own.stats.byName.get("EVALSHA")).toBe(4);
      expect(evals).toBeLessThanOrEqual(1);
      expect(own.stats.requests).toBe(4 + evals);
    } finally {
      await sw.dispose();
      await own.close();
    }
  }, T);
});

describe("workerd: a turn longer than one invocation's budget", () => {
  it("step budget: the request drives 2 steps, each cron run 3 more, the lease is released in between", async () => {
    const w = await startWorker(fixture("worker.ts"), {
      bindings: bindings("wd2"),
      define: { GATEHOUSE_TEST: { budget: { steps: 2 }, scheduledBudget: { steps: 3 } } },
    });
    try {
      const peek = upstashStore({ url: bridge.url, token: bridge.token, prefix: "wd2" });
      expect((await task(w, "m1", "marathon", "go")).status).toBe(202);
      const yielded = async (n: number) =>
        eventually(`${n} hand-backs`, async () => {
          const e = (await peek.readEvents("m1", 0, 1000)).filter((x) => x.type === "claim_yielded");
          return e.length >= n ? e : undefined;
        });
      await yielded(1);
      const h = (await peek.getAgent("m1"))!;
      expect(h.leaseOwner).toBeNull(); // handed back, not abandoned under a lease
      expect(h.state).not.toBe("done");
      let runs = 0;
      while ((await view(w, "m1")).state !== "done" && runs < 10) {
        runs++;
        expect(await w.scheduled()).toMatchObject({ outcome: "ok" });
      }
      expect(runs).toBe(3); // 11 steps = 2 + 3 + 3 + 3
      expect((await view(w, "m1")).output).toEqual({ units: 5 });
      const events = await peek.readEvents("m1", 0, 1000);
      expect(events.filter((e) => e.type === "claim_yielded")).toHaveLength(3);
      expect(events.filter((e) => e.type === "tool_result")).toHaveLength(5); // no unit of work ran twice
    } finally {
      await w.dispose();
    }
  }, T);

  it("wall-time budget: with 150 ms tools and a 250 ms budget, the turn still finishes, across several cron runs", async () => {
    const w = await startWorker(fixture("worker.ts"), {
      bindings: bindings("wd3"),
      define: { GATEHOUSE_TEST: { budget: { steps: 100, ms: 250 }, scheduledBudget: { steps: 100, ms: 250 }, workMs: 150 } },
    });
    try {
      const peek = upstashStore({ url: bridge.url, token: bridge.token, prefix: "wd3" });
      expect((await task(w, "m2", "marathon", "go")).status).toBe(202);
      await eventually("the first hand-back", async () => ((await peek.getAgent("m2"))!.leaseOwner === null && (await peek.readEvents("m2", 0, 1000)).some((e) => e.type === "claim_yielded")) || undefined);
      let runs = 0;
      while ((await view(w, "m2")).state !== "done" && runs < 20) {
        runs++;
        await w.scheduled();
      }
      expect((await view(w, "m2")).output).toEqual({ units: 5 });
      expect(runs).toBeGreaterThanOrEqual(2);
      const yields = (await peek.readEvents("m2", 0, 1000)).filter((e) => e.type === "claim_yielded");
      expect(yields.length).toBeGreaterThanOrEqual(2);
      for (const y of yields) expect((y.data as { elapsedMs: number }).elapsedMs).toBeGreaterThanOrEqual(250);
    } finally {
      await w.dispose();
    }
  }, T);

  it("continuation bell: with no cron at all, the Worker re-rings itself until the turn is done", async () => {
    let w: RunningWorker | undefined;
    let rings = 0;
    // Stands in for a queue such as QStash: accepts the publish, then calls the Worker's watchdog tick route.
    const relay: Server = createServer((req, res) => {
      rings++;
      req.resume();
      res.end("queued");
      setTimeout(() => void w!.fetch("/v1/watchdog/tick", { method: "POST" }).then((r) => r.text()), 10);
    });
    await new Promise<void>((r) => relay.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(relay.address() as { port: number }).port}/publish`;
    try {
      w = await startWorker(fixture("worker.ts"), {
        bindings: bindings("wd4", { CONTINUATION_URL: url }),
        define: { GATEHOUSE_TEST: { budget: { steps: 2 } } },
      });
      expect((await task(w, "m3", "marathon", "go")).status).toBe(202);
      const done = await inState(w, "m3", "done");
      expect(done.output).toEqual({ units: 5 });
      expect(rings).toBe(5); // 11 steps, 2 per invocation: 5 hand-backs, each rang once
    } finally {
      await w?.dispose();
      relay.closeAllConnections();
      await new Promise((r) => relay.close(r));
    }
  }, T);
});

describe("workerd: isolates", () => {
  it("createGatehouse at module scope starts (no randomness outside a handler); inline: true is refused on Workers", async () => {
    const w = await startWorker(fixture("module-scope.ts"), { bindings: {} });
    try {
      expect(await (await w.fetch("/healthz")).json()).toEqual({ ok: true, store: "memory" });
      expect((await task(w, "x1", "concierge", "Refund order A-1002")).status).toBe(401);
      const authed = await w.fetch("/v1/agents/x1/tasks", {
        method: "POST",
        json: { agent: "concierge", input: "Refund order A-1002" },
        headers: { authorization: "Bearer module-scope-token-0123456789" },
      });
      expect(authed.status).toBe(202);
      const refused = (await (await w.fetch("/inline")).json()) as { name: string; message: string };
      expect(refused.name).toBe("DefinitionError");
      expect(refused.message).toContain("createWorkersHandler");
    } finally {
      await w.dispose();
    }
  }, T);

  it("serves the debugger page and its bundled assets inside workerd, without a token, while the data routes ask for one", async () => {
    const w = await startWorker(fixture("module-scope.ts"), { bindings: {} });
    try {
      const shell = await w.fetch("/debug/agents/x1");
      expect(shell.status).toBe(200);
      expect(shell.headers.get("content-type")).toMatch(/^text\/html/);
      const text = await shell.text();
      const src = /src="(\/debug\/app\.js\?v=[0-9a-f]+)"/.exec(text)?.[1];
      expect(src).toBeTruthy();
      const js = await w.fetch(src!);
      expect(js.status).toBe(200);
      expect((await js.text()).length).toBeGreaterThan(10_000);
      expect((await w.fetch("/debug/app.css")).status).toBe(200);
      expect((await w.fetch("/v1/machine")).status).toBe(401);
    } finally {
      await w.dispose();
    }
  }, T);

  it("resident actors stay correct across isolates: two Workers on one store take turns on the same agent", async () => {
    const a = await startWorker(fixture("worker.ts"), { bindings: bindings("wd5"), define: { GATEHOUSE_TEST: {} } });
    const b = await startWorker(fixture("worker.ts"), { bindings: bindings("wd5"), define: { GATEHOUSE_TEST: {} } });
    try {
      const turn = async (order: string, first: RunningWorker, second: RunningWorker, note: string) => {
        const t = (await (await task(first, "bob", "concierge", `Refund order ${order}`)).json()) as { turnId: string };
        const waiting = await waitingExternal(first, "bob", t.turnId);
        const call = waiting.pendingToolCalls[0];
        const r = await second.fetch("/v1/agents/bob/tool-results", {
          method: "POST",
          json: { turnId: t.turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: note } },
        });
        expect(r.status).toBe(200);
        return await eventually("the turn's end", async () => {
          const v = await view(first, "bob");
          return v.state === "done" && v.turnId === t.turnId ? v : undefined;
        });
      };
      // Turn 1 starts in A (A keeps the actor resident at that version) and ends in B.
      expect((await turn("A-1001", a, b, "approved by Dana")).output).toEqual({ orderId: "A-1001", refund: "approved", note: "approved by Dana" });
      // Turn 2 starts in A again: A's resident actor is versions behind and must not be used.
      expect((await turn("A-1002", a, b, "declined by Eve")).output).toEqual({ orderId: "A-1002", refund: "declined", note: "declined by Eve" });
      const peek = upstashStore({ url: bridge.url, token: bridge.token, prefix: "wd5" });
      const tasks = (await peek.readEvents("bob", 0, 1000)).filter((e) => e.type === "task");
      expect(tasks.map((e) => (e.data as { status: string }).status)).toEqual(["done", "done"]);
    } finally {
      await a.dispose();
      await b.dispose();
    }
  }, T);
});

describe("workerd: a Worker module written exactly as the docs show", () => {
  it("runs on an older compatibility date too (2024-01-01: no `cache` option on fetch)", async () => {
    const w = await startWorker(fixture("as-written.ts"), {
      compatibilityDate: "2024-01-01",
      bindings: { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token },
    });
    try {
      expect((await task(w, "old1", "helper", "hello")).status).toBe(202);
      await waitingExternal(w, "old1");
      expect(await w.scheduled()).toMatchObject({ outcome: "ok" });
    } finally {
      await w.dispose();
    }
  }, T);

  it("export default createWorkersHandler({ agents: [helper], store: (env) => upstashStore(...) }): fetch and scheduled both drive work", async () => {
    // No prefix binding, no options: the module is the documented shape, nothing more.
    const w = await startWorker(fixture("as-written.ts"), {
      bindings: { UPSTASH_REDIS_REST_URL: bridge.url, UPSTASH_REDIS_REST_TOKEN: bridge.token },
    });
    try {
      expect(await (await w.fetch("/healthz")).json()).toEqual({ ok: true, store: "upstash" });
      // fetch: the task request wakes the agent in waitUntil; a result brings it to done.
      const t = (await (await task(w, "h1", "helper", "hello")).json()) as { turnId: string };
      const waiting = await waitingExternal(w, "h1", t.turnId);
      const ok = await w.fetch("/v1/agents/h1/tool-results", {
        method: "POST",
        json: { turnId: t.turnId, toolCallId: waiting.pendingToolCalls[0].toolCallId, outcome: { ok: true, value: "yes" } },
      });
      expect(ok.status).toBe(200);
      expect((await inState(w, "h1", "done")).output).toEqual({ answer: "yes" });
      // scheduled: a task whose bell never reached this Worker (written straight to the store) is drained by the cron.
      const peek = upstashStore({ url: bridge.url, token: bridge.token });
      await peek.enqueueTask({ agentId: "h2", agentName: "helper", workerTarget: "default", input: "hi", options: {}, turnId: "turn_cron", now: Date.now() });
      expect((await view(w, "h2")).state).toBe("idle");
      expect(await w.scheduled()).toMatchObject({ outcome: "ok" });
      const h2 = await view(w, "h2");
      expect(h2.state).toBe("waiting-tools");
      expect(h2.pendingToolCalls).toMatchObject([{ name: "ask_human", external: true }]);
    } finally {
      await w.dispose();
    }
  }, T);
});
