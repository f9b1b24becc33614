/**
 * A task's `budget` only lowers the agent's spend limits (per field the
 * smaller wins), on the memory store and on Redis, through the tasks route
 * with scoped tokens: a token that may enqueue cannot lift the operator's
 * limit; a token with `admin` can (the task records `budgetMayRaise`), and
 * so can any task of an agent that sets `budget.tasksMayRaise`.
 */
import { afterAll, describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel } from "../../mod.ts";
import type { AgentSpendLimit, Gatehouse, Store } from "../../mod.ts";
import { resolveSpendLimit } from "../../common/spend-limit.ts";
import { DefinitionError } from "../../errors/errors.ts";
import { redisStore } from "../../redis.ts";
import { useRedisServer } from "../helpers/redis.ts";

const T0 = 1_700_000_000_000;
const OPS = "ops-token-0123456789abcdef";
const ENQUEUER = "enqueuer-token-0123456789";
const SECRET = "whsec_" + btoa("0123456789abcdef0123456789abcdef");

const echo = defineTool({ name: "echo", description: "Echo", parameters: z.object({ x: z.string() }), execute: ({ x }) => x });
/** Two echo steps of 60 tokens each, then a submit of 10: 130 tokens in all. */
const spender = (budget: AgentSpendLimit) =>
  defineAgent({
    name: "spender",
    instructions: "Spend.",
    tools: [echo],
    spendLimit: budget,
    model: scriptedModel(({ step }) =>
      step <= 2
        ? { toolCalls: [{ name: "echo", args: { x: `s${step}` } }], usage: { inputTokens: 50, outputTokens: 10 } }
        : { toolCalls: [{ name: "submit_result", args: { result: "ok" } }], usage: { inputTokens: 5, outputTokens: 5 } }
    ),
  });

const server = useRedisServer({}, 60_000);
let n = 0;

const stores: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `tbr${++n}x${Date.now() % 100000}` })],
];

describe.each(stores)("task budgets on the %s store", (_name, makeStore) => {
  const open: Gatehouse[] = [];
  afterAll(async () => {
    while (open.length) await open.pop()!.close();
  });

  function setup(budget: AgentSpendLimit) {
    const clock = { t: T0, now: () => clock.t };
    const gh = createGatehouse({
      agents: [spender(budget)],
      clock,
      store: makeStore(),
      auth: { tokens: [OPS, { token: ENQUEUER, verbs: ["read", "enqueue"] }], webhookSecrets: [SECRET] },
      rateLimits: false,
    });
    open.push(gh);
    /** `token`: a bearer token, or `"signed"` for a Standard Webhooks signature. */
    const run = async (agentId: string, taskBudget: unknown, token: string) => {
      const body = JSON.stringify({ agent: "spender", input: "go", spendLimit: taskBudget });
      const auth: Record<string, string> = token === "signed"
        ? { "webhook-id": `msg_${agentId}`, "webhook-timestamp": String(Math.floor(T0 / 1000)), "webhook-signature": new Webhook(SECRET).sign(`msg_${agentId}`, new Date(T0), body) }
        : { authorization: `Bearer ${token}` };
      const res = await gh.fetch(new Request(`http://gh.test/v1/agents/${agentId}/tasks`, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth },
        body,
      }));
      expect(res.status).toBe(202);
      await gh.drain();
      const events = await gh.store.readEvents(agentId, 0, 1000);
      const head = (await gh.store.getAgent(agentId))!;
      return {
        state: head.state,
        exhausted: events.find((e) => e.type === "budget_exhausted")?.data,
        options: events.find((e) => e.type === "task_enqueued")?.data.options,
      };
    };
    return { gh, run };
  }

  it("a token that may enqueue cannot raise the agent's limit: the turn fails at the agent's 100 tokens", async () => {
    const { run } = setup({ maxTokensPerTurn: 100 });
    const r = await run("b1", { maxTokensPerTurn: 1_000_000 }, ENQUEUER);
    expect(r.state).toBe("failed");
    expect(r.exhausted).toMatchObject({ limit: "maxTokensPerTurn", max: 100, used: 120 });
    expect(r.options).toEqual({ budget: { maxTokensPerTurn: 1_000_000 } });
  }, 60_000);

  it("a signed request cannot raise it either", async () => {
    const { run } = setup({ maxTokensPerTurn: 100 });
    const r = await run("b6", { maxTokensPerTurn: 1_000_000 }, "signed");
    expect(r.exhausted).toMatchObject({ limit: "maxTokensPerTurn", max: 100 });
    expect(r.options).toEqual({ budget: { maxTokensPerTurn: 1_000_000 } });
  }, 60_000);

  it("the same token lowers it, and adds fields the agent leaves out", async () => {
    const { run } = setup({ maxTokensPerTurn: 100 });
    const lower = await run("b2", { maxTokensPerTurn: 50 }, ENQUEUER);
    expect(lower.exhausted).toMatchObject({ limit: "maxTokensPerTurn", max: 50, used: 60 });
    const added = await run("b3", { maxTokensPerTurn: 1_000, maxCostPerTurn: 0 }, ENQUEUER);
    expect(added.exhausted).toMatchObject({ limit: "maxTokensPerTurn", max: 100 });
    expect(added.exhausted!.budget).toEqual({ maxTokensPerTurn: 100, maxCostPerTurn: 0 });
  }, 60_000);

  it("a token with admin raises it, and the task records that", async () => {
    const { run } = setup({ maxTokensPerTurn: 100 });
    const r = await run("b4", { maxTokensPerTurn: 1_000 }, OPS);
    expect(r.state).toBe("done");
    expect(r.exhausted).toBeUndefined();
    expect(r.options).toEqual({ budget: { maxTokensPerTurn: 1_000 }, budgetMayRaise: true });
  }, 60_000);

  it("an agent with budget.tasksMayRaise lets any task raise it", async () => {
    const { run } = setup({ maxTokensPerTurn: 100, tasksMayRaise: true });
    const r = await run("b5", { maxTokensPerTurn: 1_000 }, ENQUEUER);
    expect(r.state).toBe("done");
    expect(r.options).toEqual({ budget: { maxTokensPerTurn: 1_000 } });
  }, 60_000);
});

describe("resolving a turn's spend limit", () => {
  it("takes the smaller per field unless the task or the agent allows raising", () => {
    expect(resolveSpendLimit({ maxTokensPerTurn: 10, maxCostTotal: 5 }, { maxTokensPerTurn: 20, maxCostTotal: 1 }))
      .toEqual({ maxTokensPerTurn: 10, maxCostTotal: 1 });
    expect(resolveSpendLimit({ maxTokensPerTurn: 10 }, { maxCostPerTurn: 2 })).toEqual({ maxTokensPerTurn: 10, maxCostPerTurn: 2 });
    expect(resolveSpendLimit({ maxTokensPerTurn: 10 }, { maxTokensPerTurn: 20 }, true)).toEqual({ maxTokensPerTurn: 20 });
    expect(resolveSpendLimit({ maxTokensPerTurn: 10, tasksMayRaise: true }, { maxTokensPerTurn: 20 })).toEqual({ maxTokensPerTurn: 20 });
    expect(resolveSpendLimit({ maxTokensPerTurn: 10, tasksMayRaise: false }, { maxTokensPerTurn: 20 })).toEqual({ maxTokensPerTurn: 10 });
  });

  it("defineAgent takes tasksMayRaise as a boolean only, and a task body never", () => {
    const model = scriptedModel([{ text: "x" }]);
    expect(() => defineAgent({ name: "b", instructions: "", model, spendLimit: { tasksMayRaise: "yes" as never } })).toThrow(DefinitionError);
    expect(() => defineAgent({ name: "b", instructions: "", model, spendLimit: { tasksMayRaise: true } })).not.toThrow();
    expect(resolveSpendLimit({ maxTokensPerTurn: 10 }, { maxTokensPerTurn: 20, tasksMayRaise: true })).toEqual({ maxTokensPerTurn: 10 });
  });
});
