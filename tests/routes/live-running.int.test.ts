/**
 * The agent view follows the turn live (routes/agent-view.ts): a turn reads
 * `running` from its claim on, `activity` says what it is doing, and an
 * accepted tool result reads `delivered` at once. On memory, and on Redis
 * where the reader is a second gatehouse with no worker (another process
 * serving the view: it only reads the store).
 *
 * Invariants checked:
 * - Throughout the first model call of a turn (a model streaming 10 pieces
 *   over 1.5 s, the view polled every 100 ms), `GET /v1/agents/:id` reads
 *   `state: "running"` for the turn (`activeTurnId`) and `activity: { kind:
 *   "model", step: 1 }`: the claim stored the turn's state (store/port.ts
 *   invariant `turn-start`), the rest of its start rides with that call's commit.
 * - While an in-process tool runs: `activity.kind: "tool"` with its id;
 *   while the verifier runs: `activity.kind: "verifier"`; at rest the
 *   activity is null.
 * - An external result accepted by `POST …/tool-results` reads
 *   `delivered: true` on the pending call at once, before any worker applied
 *   it; once applied the call is no longer pending.
 *
 * Timing: the model, the tool and the verifier hold until the test saw what
 * it polls for (deferreds), so no verdict depends on wall-clock speed; the
 * model's 1.5 s stream only gives the polls time to land inside the call.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, type Gatehouse, type ModelRequest, type ModelResponse, type Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { memoryStore } from "../../store/memory.ts";
import { deferred } from "../helpers/host.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { send } from "../helpers/http.ts";

const server = useRedisServer({}, 60_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function view(gh: Gatehouse, agentId: string): Promise<any> {
  const res = await gh.fetch(new Request(`http://gatehouse/v1/agents/${agentId}`));
  expect(res.status).toBe(200);
  return await res.json();
}

async function post(gh: Gatehouse, path: string, body: unknown): Promise<{ status: number; json: any }> {
  return await send(gh, "POST", path, body, {}, "http://gatehouse");
}

/** Polls the view until `ok` holds (at most `ms`). */
async function viewUntil(gh: Gatehouse, agentId: string, ok: (v: any) => boolean, what: string, ms = 20_000): Promise<any> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await view(gh, agentId);
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last view: ${JSON.stringify(v)}`);
    await sleep(25);
  }
}

/**
 * Step 1: streams 10 pieces over 1.5 s, then calls `work` (in process). Step 2: proposes the output,
 * which the verifier checks. The tool and the verifier hold until the test lets them go.
 */
function liveAgent() {
  const model = { inCall: false, started: deferred<void>(), ended: deferred<void>() };
  const tool = { entered: deferred<void>(), release: deferred<void>() };
  const verifier = { entered: deferred<void>(), release: deferred<void>() };
  const agent = defineAgent({
    name: "live",
    instructions: "Work, then answer.",
    output: {
      schema: z.object({ answer: z.string() }),
      verify: async () => {
        verifier.entered.resolve();
        await verifier.release.promise;
        return undefined; // keeps the parsed candidate
      },
    },
    tools: [defineTool({
      name: "work", description: "Works", parameters: z.object({}),
      execute: async () => {
        tool.entered.resolve();
        await tool.release.promise;
        return "worked";
      },
    })],
    model: {
      name: "slow-stream",
      async generate(req: ModelRequest): Promise<ModelResponse> {
        if (req.step > 1) return { toolCalls: [{ name: "agent_output", args: { answer: "42" } }] };
        model.inCall = true;
        model.started.resolve();
        for (let i = 0; i < 10; i++) {
          await sleep(150);
          req.onChunk?.(`piece ${i} `);
        }
        model.inCall = false;
        model.ended.resolve();
        return { text: "thinking done", toolCalls: [{ id: "w1", name: "work", args: {} }] };
      },
    },
  });
  return { agent, model, tool, verifier };
}

/** An agent whose first step calls the external tool `approve`, then answers with its result. */
function externalAgent() {
  return defineAgent({
    name: "ext",
    instructions: "Ask for approval.",
    tools: [defineTool({ name: "approve", description: "A human approves", parameters: z.object({}) })],
    model: {
      name: "scripted",
      async generate(req: ModelRequest): Promise<ModelResponse> {
        if (req.step === 1) return { toolCalls: [{ id: "a1", name: "approve", args: {} }] };
        return { toolCalls: [{ name: "submit_result", args: { result: "approved" } }] };
      },
    },
  });
}

const envs: Array<[string, () => { worker: Store; reader: Store }]> = [
  ["memory", () => {
    const s = memoryStore();
    return { worker: s, reader: s };
  }],
  ["redis", () => {
    const prefix = `live${Math.random().toString(36).slice(2, 8)}:`;
    return { worker: redisStore({ url: server.url, prefix }), reader: redisStore({ url: server.url, prefix }) };
  }],
];

for (const [name, open] of envs) {
  describe(`the live agent view (${name}; the reader is a gatehouse with no worker)`, () => {
    it("reads running with model activity throughout the first model call, then tool, verifier, and no activity at rest", async () => {
      const stores = open();
      const { agent, model, tool, verifier } = liveAgent();
      const worker = createGatehouse({ agents: [agent], store: stores.worker });
      const reader = createGatehouse({ agents: [agent], store: stores.reader });
      try {
        const enq = await post(reader, "/v1/agents/l1/tasks", { agent: "live", input: "go" });
        expect(enq.status).toBe(202);
        const queued = await view(reader, "l1");
        expect([queued.state, queued.activity]).toEqual(["idle", null]);
        worker.startWorker();
        await model.started.promise;

        // Every 100 ms during the call: running, the claimed turn, model activity of step 1.
        const turnId = enq.json.turnId;
        expect(typeof turnId).toBe("string");
        const during: any[] = [];
        while (model.inCall) {
          const v = await view(reader, "l1");
          // Only reads that began and ended within the call count (the call may end in between).
          if (model.inCall) during.push(v);
          await sleep(100);
        }
        await model.ended.promise;
        expect(during.length).toBeGreaterThanOrEqual(3);
        for (const v of during) {
          expect(v).toMatchObject({ state: "running", activity: { kind: "model", step: 1 } });
          // The claim stored the state only: the first commit (and version 1) comes with this call's end.
          expect(v.version).toBe(0);
          expect(v.activeTurnId).toBe(turnId);
          expect(v.activeTurnId).toBe(v.turnId);
          expect(v.output).toBeUndefined();
          expect(v.lease).not.toBeNull();
          expect(v.activity.sinceMs).toBeLessThanOrEqual(Date.now());
          expect(new Date(v.activity.since).getTime()).toBe(v.activity.sinceMs);
        }

        await tool.entered.promise;
        const working = await viewUntil(reader, "l1", (v) => v.state === "waiting-tools", "the tool step");
        expect(working.activity).toMatchObject({ kind: "tool", step: 1, toolCallIds: ["w1"] });
        expect(working.pendingToolCalls).toMatchObject([{ toolCallId: "w1", name: "work", external: false, delivered: false }]);
        tool.release.resolve();

        await verifier.entered.promise;
        const verifying = await viewUntil(reader, "l1", (v) => v.state === "verifying", "the verification");
        expect(verifying.activity).toMatchObject({ kind: "verifier", step: 2 });
        expect(verifying.activity.toolCallIds).toBeUndefined();
        verifier.release.resolve();

        const done = await viewUntil(reader, "l1", (v) => v.state === "done", "the turn's end");
        expect(done.activity).toBeNull();
        expect(done.output).toEqual({ answer: "42" });
      } finally {
        tool.release.resolve();
        verifier.release.resolve();
        await worker.close();
        if (stores.reader !== stores.worker) await reader.close();
      }
    }, 60_000);

    it("an accepted external result reads delivered at once, before a worker applies it", async () => {
      const stores = open();
      const agent = externalAgent();
      // Neither gatehouse runs a worker loop: the claims run only when the test drains them.
      const worker = createGatehouse({ agents: [agent], store: stores.worker });
      const reader = createGatehouse({ agents: [agent], store: stores.reader });
      try {
        expect((await post(reader, "/v1/agents/e1/tasks", { agent: "ext", input: "go" })).status).toBe(202);
        await worker.drain();
        const waiting = await view(reader, "e1");
        expect(waiting).toMatchObject({ state: "waiting-tools", activity: { kind: "tool", step: 1, toolCallIds: ["a1"] } });
        expect(waiting.pendingToolCalls).toMatchObject([{ toolCallId: "a1", external: true, delivered: false }]);

        const r = await post(reader, "/v1/agents/e1/tool-results", { turnId: waiting.turnId, toolCallId: "a1", outcome: { ok: true, value: "yes" } });
        expect(r).toMatchObject({ status: 200, json: { accepted: true, duplicate: false } });
        const delivered = await view(reader, "e1");
        expect(delivered.state).toBe("waiting-tools");
        expect(delivered.pendingToolCalls).toMatchObject([{ toolCallId: "a1", delivered: true }]);

        await worker.drain();
        const done = await view(reader, "e1");
        expect(done).toMatchObject({ state: "done", activity: null, pendingToolCalls: [] });
      } finally {
        await worker.close();
        if (stores.reader !== stores.worker) await reader.close();
      }
    }, 60_000);
  });
}
