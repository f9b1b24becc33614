/**
 * `concurrencyKey` and `priority` as the routes take them (common/concurrency.ts,
 * routes/task-options.ts, agents/concurrency-key.ts):
 * - a bad key or priority on `POST …/tasks`, schedules, `POST /v1/chat` and
 *   `POST /v1/ag-ui` is 400 `validation_failed` naming the field, and nothing
 *   is enqueued;
 * - a valid one is stored on the task (the agent view and `GET …/tasks/:turnId`
 *   show it), a schedule keeps it for its ticks;
 * - without one, the definition's `concurrencyKey(task)` derives it (it sees
 *   the agent id, the input, how the task came); a derived key that is not a
 *   key is 422 `invalid_concurrency_key`, nothing enqueued;
 * - `createGatehouse({ concurrencyLimits })` refuses a bad limit or key naming it.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, DefinitionError, memoryStore, scriptedModel } from "../../mod.ts";
import type { ConcurrencyKeyTask } from "../../agents/concurrency-key.ts";

const BASE = "http://gh.test";
const post = (path: string, body: unknown, method = "POST") =>
  new Request(BASE + path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

function setup(concurrencyKey?: (t: ConcurrencyKeyTask) => string | null) {
  const seen: ConcurrencyKeyTask[] = [];
  const agent = defineAgent({
    name: "helper", instructions: "Help.", model: scriptedModel([{ text: "ok" }]),
    ...(concurrencyKey ? { concurrencyKey: (t: ConcurrencyKeyTask) => (seen.push(t), concurrencyKey(t)) } : {}),
  });
  const store = memoryStore();
  const gh = createGatehouse({ agents: [agent], store, concurrencyLimits: { "tenant:a": 1 } });
  return { gh, store, seen };
}

async function problem(res: Response, status: number, code: string): Promise<{ detail: string; errors?: Array<{ path: unknown[] }> }> {
  expect(res.status).toBe(status);
  const body = await res.json() as { code: string; detail: string; errors?: Array<{ path: unknown[] }> };
  expect(body.code).toBe(code);
  return body;
}

const BAD_KEYS: Array<[unknown, RegExp]> = [
  ["", /concurrencyKey must be 1 to 256 characters, got 0/],
  ["k".repeat(257), /concurrencyKey must be 1 to 256 characters, got 257/],
  ["user\n42", /concurrencyKey must not hold control characters \(U\+000A at 4\)/],
  ["user\u0085", /control characters/],
];
const BAD_PRIORITIES: Array<[unknown, RegExp]> = [
  [-1, /priority must be a whole number of seconds from 0 to 86400, got -1/],
  [86_401, /got 86401/],
  [1.5, /got 1.5/],
];

describe("bad concurrencyKey / priority: 400 naming the field, nothing enqueued", () => {
  const routes: Array<[string, (field: Record<string, unknown>) => Request]> = [
    ["POST …/tasks", (f) => post("/v1/agents/a1/tasks", { agent: "helper", input: "hi", ...f })],
    ["PUT …/schedules", (f) => post("/v1/agents/a1/schedules/s1", { agent: "helper", input: "hi", everyMs: 60_000, ...f }, "PUT")],
    ["POST /v1/chat", (f) => post("/v1/chat", { id: "a1", agent: "helper", messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }], ...f })],
    ["POST /v1/ag-ui", (f) => post("/v1/ag-ui", {
      threadId: "a1", runId: "r1", state: {}, tools: [], context: [],
      messages: [{ id: "m1", role: "user", content: "hi" }], forwardedProps: { agent: "helper", ...f },
    })],
  ];
  for (const [name, request] of routes) {
    it(name, async () => {
      const { gh, store } = setup();
      for (const [field, cases] of [["concurrencyKey", BAD_KEYS], ["priority", BAD_PRIORITIES]] as const) {
        for (const [value, message] of cases) {
          const body = await problem(await gh.fetch(request({ [field]: value })), 400, "validation_failed");
          expect(body.detail).toMatch(message);
          expect(JSON.stringify(body.errors)).toContain(field);
        }
      }
      expect(await store.getAgent("a1")).toBeNull();
      expect(await store.listSchedules("a1")).toEqual([]);
    });
  }
});

describe("a valid key and priority are stored and shown", () => {
  it("POST …/tasks: the task carries them; the agent view and the turn view show them and why it waits", async () => {
    const { gh } = setup();
    const res = await gh.fetch(post("/v1/agents/a1/tasks", { agent: "helper", input: "hi", concurrencyKey: "tenant:b", priority: 30 }));
    expect(res.status).toBe(202);
    const { turnId } = await res.json() as { turnId: string };
    const view = await (await gh.fetch(new Request(`${BASE}/v1/agents/a1`))).json() as Record<string, unknown>;
    expect(view.queuedTasks).toEqual([expect.objectContaining({ turnId, concurrencyKey: "tenant:b", priority: 30 })]);
    // Nothing runs (no worker): first in line, its lane has no limit, so it waits for a worker in lane tenant:b.
    expect(view.waiting).toEqual({ for: "lane", key: "tenant:b", queued: 1 });
    const turn = await (await gh.fetch(new Request(`${BASE}/v1/agents/a1/tasks/${turnId}`))).json();
    expect(turn).toMatchObject({ status: "queued", concurrencyKey: "tenant:b", priority: 30, waiting: { for: "lane", key: "tenant:b" } });
    // A second task waits behind the first (the agent's own turn comes first).
    const second = await (await gh.fetch(post("/v1/agents/a1/tasks", { agent: "helper", input: "again" }))).json() as { turnId: string };
    const turn2 = await (await gh.fetch(new Request(`${BASE}/v1/agents/a1/tasks/${second.turnId}`))).json();
    expect(turn2).toMatchObject({ status: "queued", waiting: { for: "turn", ahead: 1 } });
    expect(turn2).not.toHaveProperty("concurrencyKey");
  });

  it("a schedule keeps the key and priority for its ticks", async () => {
    const { gh } = setup();
    const res = await gh.fetch(post("/v1/agents/a1/schedules/s1", { agent: "helper", input: "hi", everyMs: 60_000, concurrencyKey: "tenant:c", priority: 5 }, "PUT"));
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ concurrencyKey: "tenant:c", priority: 5 });
  });
});

describe("the definition's concurrencyKey(task)", () => {
  it("derives the key when the request gives none, never when it gives one", async () => {
    const { gh, seen } = setup((t) => `user:${t.agentId}`);
    const a = await (await gh.fetch(post("/v1/agents/a1/tasks", { agent: "helper", input: { q: 1 } }))).json() as { turnId: string };
    expect(await (await gh.fetch(new Request(`${BASE}/v1/agents/a1/tasks/${a.turnId}`))).json()).toMatchObject({ concurrencyKey: "user:a1" });
    expect(seen).toEqual([{ agentId: "a1", agentName: "helper", input: { q: 1 }, via: "task" }]);
    const b = await (await gh.fetch(post("/v1/agents/a2/tasks", { agent: "helper", input: "x", concurrencyKey: "given" }))).json() as { turnId: string };
    expect(await (await gh.fetch(new Request(`${BASE}/v1/agents/a2/tasks/${b.turnId}`))).json()).toMatchObject({ concurrencyKey: "given" });
    expect(seen).toHaveLength(1);
  });

  it("null means none (the default lane)", async () => {
    const { gh } = setup(() => null);
    const a = await (await gh.fetch(post("/v1/agents/a1/tasks", { agent: "helper", input: "x" }))).json() as { turnId: string };
    const turn = await (await gh.fetch(new Request(`${BASE}/v1/agents/a1/tasks/${a.turnId}`))).json();
    expect(turn).not.toHaveProperty("concurrencyKey");
    expect(turn).toMatchObject({ waiting: { for: "lane", key: "" } });
  });

  it("a derived key that is not a key is 422 invalid_concurrency_key; nothing enqueued", async () => {
    const { gh, store } = setup(() => "bad\u0000key");
    const body = await problem(await gh.fetch(post("/v1/agents/a1/tasks", { agent: "helper", input: "x" })), 422, "invalid_concurrency_key");
    expect(body.detail).toMatch(/Agent definition "helper": concurrencyKey\(task\) returned a key that must not hold control characters/);
    await problem(await gh.fetch(post("/v1/chat", { id: "a1", agent: "helper", messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }] })), 422, "invalid_concurrency_key");
    expect(await store.getAgent("a1")).toBeNull();
  });
});

describe("createGatehouse({ concurrencyLimits }) and metricsLanes", () => {
  const agent = defineAgent({ name: "a", instructions: "x", model: scriptedModel([{ text: "ok" }]) });
  const refused = (options: Record<string, unknown>): DefinitionError => {
    try {
      createGatehouse({ agents: [agent], ...options });
    } catch (err) {
      expect(err).toBeInstanceOf(DefinitionError);
      return err as DefinitionError;
    }
    throw new Error("expected a DefinitionError");
  };

  it("refuses a limit that is not a whole number from 1, or a bad key, naming it", () => {
    expect(refused({ concurrencyLimits: { "user:42": 0 } }).key).toBe("concurrencyLimits.user:42");
    expect(refused({ concurrencyLimits: { "*": 2.5 } }).message).toMatch(/limit of "\*" must be a whole number from 1 to 1000000, got 2.5/);
    expect(refused({ concurrencyLimits: { "a\tb": 1 } }).message).toMatch(/key "a\\tb" must not hold control characters/);
    expect(refused({ concurrencyLimits: [1] }).key).toBe("concurrencyLimits");
    expect(refused({ metricsLanes: -1 }).key).toBe("metricsLanes");
    expect(() => createGatehouse({ agents: [agent], concurrencyLimits: { "user:42": 5, "*": 10 }, metricsLanes: 0 })).not.toThrow();
  });
});

describe("a schedule's tick", () => {
  it("enqueues its task with the schedule's key and priority", async () => {
    const { manualClock } = await import("../helpers/clock.ts");
    const clock = manualClock();
    const base = memoryStore();
    const fired: Array<Record<string, unknown>> = [];
    const store = new Proxy(base, {
      get(t, p) {
        const v = Reflect.get(t, p);
        if (p !== "fireScheduleTick") return typeof v === "function" ? v.bind(t) : v;
        return (req: Record<string, unknown>) => (fired.push(req), (v as (r: unknown) => unknown).call(t, req));
      },
    });
    const agent = defineAgent({ name: "helper", instructions: "Help.", model: scriptedModel([{ text: "ok" }, { text: "ok" }]) });
    const gh = createGatehouse({ agents: [agent], store, clock });
    const res = await gh.fetch(post("/v1/agents/a1/schedules/s1", { agent: "helper", input: "tick", everyMs: 1_000, concurrencyKey: "tenant:s", priority: 7 }, "PUT"));
    expect(res.status).toBe(201);
    clock.advance(1_000);
    await gh.drain();
    const fire = fired.find((r) => r.fireTick !== null);
    expect(fire).toMatchObject({ concurrencyKey: "tenant:s", priority: 7 });
    const done = (await base.listQueuedTasks("a1", 10));
    expect(done.every((t) => t.concurrencyKey === "tenant:s")).toBe(true);
    await gh.close();
  });
});

describe("waiting: concurrency_key", () => {
  it("a task whose key is at its limit says so, with the limit and the running count; it starts once the slot frees", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const started: string[] = [];
    const agent = defineAgent({
      name: "helper", instructions: "Help.",
      model: scriptedModel(async (ctx) => {
        started.push(ctx.agentId);
        if (ctx.agentId === "a1") await gate;
        return { text: "ok" };
      }),
    });
    const store = memoryStore();
    const gh = createGatehouse({ agents: [agent], store, concurrencyLimits: { "tenant:a": 1 }, concurrency: 2, pollMs: 10 });
    gh.startWorker();
    try {
      expect((await gh.fetch(post("/v1/agents/a1/tasks", { agent: "helper", input: "x", concurrencyKey: "tenant:a" }))).status).toBe(202);
      for (let i = 0; i < 200 && !started.includes("a1"); i++) await new Promise((r) => setTimeout(r, 10));
      expect(started).toEqual(["a1"]);
      const b = await (await gh.fetch(post("/v1/agents/a2/tasks", { agent: "helper", input: "y", concurrencyKey: "tenant:a" }))).json() as { turnId: string };
      await new Promise((r) => setTimeout(r, 100));
      expect(started).toEqual(["a1"]);
      const turn = await (await gh.fetch(new Request(`${BASE}/v1/agents/a2/tasks/${b.turnId}`))).json();
      expect(turn).toMatchObject({ status: "queued", concurrencyKey: "tenant:a", waiting: { for: "concurrency_key", key: "tenant:a", limit: 1, running: 1 } });
      const view = await (await gh.fetch(new Request(`${BASE}/v1/agents/a2`))).json();
      expect(view).toMatchObject({ waiting: { for: "concurrency_key", key: "tenant:a", limit: 1, running: 1 } });
      expect(await (await gh.fetch(new Request(`${BASE}/v1/agents/a1`))).json()).toMatchObject({ concurrencyKey: "tenant:a" });
      open();
      for (let i = 0; i < 300 && (await store.getAgent("a2"))?.state !== "done"; i++) await new Promise((r) => setTimeout(r, 10));
      expect(started).toEqual(["a1", "a2"]);
    } finally {
      open();
      await gh.close();
    }
  });
});
