/**
 * A cancel never lands on another turn than the one it was accepted for.
 *
 * The race: turn 1 runs, turn 2 is queued, a cancel (naming no turn) is
 * accepted while turn 1 is active, and turn 1 finishes before any worker
 * applies the cancel. The cancel mail then sits in the inbox when the next
 * claim starts turn 2. Before cancels named their turn, that claim cancelled
 * turn 2 (memory store: 40 of 40 runs, Redis: 15 of 40). Now the cancel is
 * fixed to turn 1 when accepted, and the host ignores it for turn 2 with a
 * `mail_ignored` event (`why: "turn_finished"`).
 *
 * Two versions on each store: a deterministic one (the cancel is accepted
 * while turn 1's model call is held open; the call then finishes the turn),
 * and a timing one (the cancel is sent a few random ticks around the end of
 * turn 1), where the invariant is: the only turn that may end cancelled is
 * the one the 202 named, and turn 2 always runs.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, memoryStore } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import type { Gatehouse, Store } from "../../mod.ts";
import type { ModelResponse } from "../../models/types.ts";
import { deferred } from "../helpers/host.ts";
import { useRedisServer } from "../helpers/redis.ts";

const RUNS = 40;

interface Race {
  gh: Gatehouse;
  call(method: string, path: string, body?: unknown): Promise<Response>;
  /** Resolves when the model was called for turn 1. */
  turn1Started: Promise<void>;
  /** Lets turn 1's model call return (its answer ends the turn). */
  finishTurn1(): void;
}

function race(store: Store, holdTurn1: boolean): Race {
  const started = deferred<void>();
  const gate = deferred<void>();
  if (!holdTurn1) gate.resolve();
  let first: string | null = null;
  const agent = defineAgent({
    name: "racer",
    instructions: "",
    model: {
      name: "gated",
      async generate(req): Promise<ModelResponse> {
        first ??= req.turnId;
        if (req.turnId === first) {
          started.resolve();
          await gate.promise;
        }
        return { text: `answer of ${req.turnId}` };
      },
    },
  });
  const gh = createGatehouse({ agents: [agent], store, leaseMs: 5_000 });
  const call = (method: string, path: string, body?: unknown) =>
    gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
  return { gh, call, turn1Started: started.promise, finishTurn1: () => gate.resolve() };
}

async function enqueueTwo(r: Race, agentId: string) {
  const ids: string[] = [];
  for (const input of ["first", "second"]) {
    const res = await r.call("POST", `/v1/agents/${agentId}/tasks`, { agent: "racer", input });
    expect(res.status).toBe(202);
    ids.push((await res.json()).turnId);
  }
  return ids;
}

async function turnOutcome(gh: Gatehouse, agentId: string, turnId: string) {
  const events = await gh.store.readEvents(agentId, 0, 10_000);
  const task = events.find((e) => e.type === "task" && e.data.turnId === turnId);
  return task ? { status: task.data.status, reason: (task.data.error as { reason?: string } | null)?.reason ?? null } : null;
}

function suite(name: string, makeStore: () => Store) {
  describe(`cancel vs. the end of a turn, second task queued (${name})`, () => {
    it(`a cancel accepted while turn 1 runs, when turn 1 finishes first, does nothing to turn 2 (${RUNS} runs)`, async () => {
      for (let i = 0; i < RUNS; i++) {
        const store = makeStore();
        const r = race(store, true);
        const agentId = `race-${i}`;
        const [t1, t2] = await enqueueTwo(r, agentId);
        const draining = r.gh.drain();
        await r.turn1Started;
        const res = await r.call("POST", `/v1/agents/${agentId}/cancel`, { reason: "stop turn 1" });
        expect(res.status).toBe(202);
        expect(await res.json()).toEqual({ accepted: true, turnId: t1 });
        r.finishTurn1();
        await draining;
        await r.gh.drain();

        expect(await turnOutcome(r.gh, agentId, t1)).toEqual({ status: "done", reason: null });
        expect(await turnOutcome(r.gh, agentId, t2)).toEqual({ status: "done", reason: null });
        expect(await store.getTurn(agentId, t2)).toEqual({ turnId: t2, status: "done", input: "second" });
        const view = await (await r.call("GET", `/v1/agents/${agentId}`)).json();
        expect(view).toMatchObject({ state: "done", turnId: t2, output: `answer of ${t2}` });
        const ignored = (await store.readEvents(agentId, 0, 10_000)).filter((e) => e.type === "mail_ignored");
        expect(ignored.map((e) => [e.turnId, e.data.kind, e.data.turnId, e.data.why])).toEqual([[t2, "cancel", t1, "turn_finished"]]);
        // A cancel naming turn 1 now is refused and changes nothing.
        const late = await r.call("POST", `/v1/agents/${agentId}/cancel`, { turnId: t1 });
        expect(late.status).toBe(409);
        expect((await late.json()).code).toBe("turn_finished");
        await store.close();
      }
    });

    it(`a cancel sent at a random moment around the end of turn 1 cancels at most the turn its 202 named (${RUNS} runs)`, async () => {
      let cancelledTurn1 = 0;
      let missed = 0;
      for (let i = 0; i < RUNS; i++) {
        const store = makeStore();
        const r = race(store, false);
        const agentId = `jitter-${i}`;
        const [t1, t2] = await enqueueTwo(r, agentId);
        const draining = r.gh.drain();
        await new Promise((res) => setTimeout(res, Math.floor(Math.random() * 4)));
        const res = await r.call("POST", `/v1/agents/${agentId}/cancel`, { reason: "jitter" });
        const named = res.status === 202 ? (await res.json()).turnId as string : null;
        if (res.status !== 202) {
          expect(res.status).toBe(409); // between the turns: nothing active
          missed++;
        }
        await draining;
        await r.gh.drain();
        const o1 = await turnOutcome(r.gh, agentId, t1);
        const o2 = await turnOutcome(r.gh, agentId, t2);
        for (const [turnId, o] of [[t1, o1], [t2, o2]] as const) {
          expect(o?.status === "done" || (o?.status === "failed" && o.reason === "cancelled")).toBe(true);
          if (o?.reason === "cancelled") expect(turnId).toBe(named);
        }
        if (o1?.reason === "cancelled") cancelledTurn1++;
        await store.close();
      }
      // Both outcomes are possible; the point is the invariant above, checked on every run.
      expect(cancelledTurn1 + missed).toBeLessThanOrEqual(RUNS);
    });
  });
}

suite("memory", () => memoryStore());

const server = useRedisServer();
let n = 0;
suite("redis", () => redisStore({ url: server!.url, prefix: `race${++n}_${Math.random().toString(36).slice(2, 8)}` }));
