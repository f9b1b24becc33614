/**
 * What bounds `POST /v1/agents/:agentId/what-if` on the memory store and on
 * Redis: the verb `replay` (a `read` token gets 403 and spends no verifier
 * call), the per-request candidate cap (`whatIfMaxCandidates`, default 20;
 * `nextAfter` goes on), and one rate-limit unit per judged candidate against
 * the token's and the agent's buckets (a refusal stops the run: 200 with what
 * was judged, or 429 when nothing was).
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { authFromEnv, createGatehouse, defineAgent, memoryStore, scriptedModel, VerificationRejected } from "../../mod.ts";
import type { GatehouseOptions, Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { useRedisServer } from "../helpers/redis.ts";

const T0 = 1_700_000_000_000;
const OPS = "ops-token-0123456789abcdef";
const READER = "reader-token-0123456789ab";
const REPLAYER = "replayer-token-0123456789";
/** Candidates the agent records: the verifier takes only the last one. */
const N = 25;

const server = useRedisServer({}, 60_000);
let n = 0;

const idle = () => defineAgent({ name: "idle", instructions: "-", model: scriptedModel([{ text: "-" }]) });

const stores: Array<[string, () => Store]> = [
  ["memory", () => memoryStore()],
  ["redis", () => redisStore({ url: server.url, prefix: `wil${++n}x${Date.now() % 100000}` })],
];

describe.each(stores)("what-if limits on the %s store", (_name, makeStore) => {
  function setup(extra: Partial<GatehouseOptions> = {}) {
    const calls = { n: 0 };
    const fixer = defineAgent({
      name: "fixer",
      instructions: "fix",
      stepLimit: N + 2,
      verifyAttempts: N,
      model: scriptedModel(({ step }) => ({ toolCalls: [{ name: "agent_output", args: { summary: `v${step}` } }] })),
      output: {
        schema: z.object({ summary: z.string() }),
        verify: (c: { summary: string }) => {
          calls.n++;
          if (c.summary !== `v${N}`) throw new VerificationRejected({ message: "not yet", code: "too_vague", retryable: true });
        },
      },
    });
    const clock = { t: T0, now: () => clock.t };
    const gh = createGatehouse({
      agents: [fixer],
      clock,
      store: makeStore(),
      auth: {
        tokens: [
          OPS,
          { token: READER, verbs: ["read"] },
          { token: REPLAYER, verbs: ["read", "replay"] },
        ],
      },
      rateLimits: false,
      ...extra,
    });
    const call = async (path: string, body: unknown, token = OPS) => {
      const res = await gh.fetch(new Request(`http://gh.test${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      }));
      return { status: res.status, headers: res.headers, body: await res.json() as any };
    };
    const run = async () => {
      expect((await call("/v1/agents/w1/tasks", { agent: "fixer", input: "go" })).status).toBe(202);
      await gh.drain();
      const events = await gh.store.readEvents("w1", 0, 10_000);
      expect(events.filter((e) => e.type === "tool_call" && e.data.name === "agent_output")).toHaveLength(N);
      calls.n = 0;
    };
    return { gh, calls, call, run };
  }

  it("needs the verb replay: a read token gets 403 and calls no verifier", async () => {
    const { gh, calls, call, run } = setup();
    try {
      await run();
      const r = await call("/v1/agents/w1/what-if", {}, READER);
      expect(r.status).toBe(403);
      expect(r.body.code).toBe("forbidden");
      expect(calls.n).toBe(0);
      expect((await call("/v1/agents/w1/what-if", {}, REPLAYER)).status).toBe(200);
    } finally {
      await gh.close();
    }
  }, 60_000);

  it("accepts replay in scoped tokens from the environment", () => {
    const auth = authFromEnv({ GATEHOUSE_TOKENS: JSON.stringify([{ token: REPLAYER, verbs: ["replay"] }]) });
    expect(auth?.tokens).toEqual([{ token: REPLAYER, verbs: ["replay"] }]);
    expect(() => createGatehouse({ agents: [idle()], store: memoryStore(), auth: auth! })).not.toThrow();
    expect(() => createGatehouse({ agents: [idle()], store: memoryStore(), auth: { tokens: [{ token: REPLAYER, verbs: ["replays" as "replay"] }] } }))
      .toThrow(/read, enqueue, deliver, cancel, approve, replay, admin/);
  });

  it("judges at most 20 candidates per request by default; nextAfter judges the rest", async () => {
    const { gh, calls, call, run } = setup();
    try {
      await run();
      const first = await call("/v1/agents/w1/what-if", {});
      expect(first.status).toBe(200);
      expect(first.body.candidates).toHaveLength(20);
      expect(calls.n).toBe(20);
      expect(first.body).toMatchObject({ total: N, maxCandidates: 20, stopped: "candidate_cap" });
      expect(first.body.nextAfter).toBe(first.body.candidates[19].eventId);
      const rest = await call("/v1/agents/w1/what-if", { after: first.body.nextAfter });
      expect(rest.body.candidates).toHaveLength(N - 20);
      expect(rest.body).toMatchObject({ total: N - 20, stopped: null, nextAfter: null });
      expect(calls.n).toBe(N);
      expect(rest.body.candidates.at(-1).now.outcome).toBe("passed");
    } finally {
      await gh.close();
    }
  }, 60_000);

  it("takes whatIfMaxCandidates and refuses a bad one", async () => {
    expect(() => createGatehouse({ agents: [idle()], store: memoryStore(), whatIfMaxCandidates: 0 })).toThrow(/whatIfMaxCandidates/);
    const { gh, calls, call, run } = setup({ whatIfMaxCandidates: 3 });
    try {
      await run();
      const r = await call("/v1/agents/w1/what-if", {});
      expect(r.body.candidates).toHaveLength(3);
      expect(r.body).toMatchObject({ maxCandidates: 3, stopped: "candidate_cap" });
      expect(calls.n).toBe(3);
    } finally {
      await gh.close();
    }
  }, 60_000);

  it("charges one rate-limit unit per judged candidate and stops when a bucket refuses", async () => {
    // The agent's bucket: 10 units. The enqueue takes one, the what-if request one, then one per candidate.
    const { gh, calls, call, run } = setup({
      whatIfMaxCandidates: 1_000,
      rateLimits: { perToken: { limit: 1_000, periodMs: 60_000 }, perAgent: { limit: 10, periodMs: 60_000 } },
    });
    try {
      await run();
      const r = await call("/v1/agents/w1/what-if", {});
      expect(r.status).toBe(200);
      expect(calls.n).toBe(8);
      expect(r.body.candidates).toHaveLength(8);
      expect(r.body).toMatchObject({ total: N, stopped: "rate_limited", nextAfter: r.body.candidates[7].eventId });
      expect(r.body.retryAfterMs).toBeGreaterThan(0);
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      // The bucket is empty: the next request is refused before any verifier runs.
      const again = await call("/v1/agents/w1/what-if", { after: r.body.nextAfter });
      expect(again.status).toBe(429);
      expect(again.body.code).toBe("rate_limited");
      expect(calls.n).toBe(8);
    } finally {
      await gh.close();
    }
  }, 60_000);

  it("charges the token's bucket too, across agents", async () => {
    const { gh, calls, call, run } = setup({
      whatIfMaxCandidates: 1_000,
      rateLimits: { perToken: { limit: 6, periodMs: 60_000 }, perAgent: false },
    });
    try {
      await run(); // with the ops token, whose bucket is its own
      const r = await call("/v1/agents/w1/what-if", {}, REPLAYER);
      expect(r.status).toBe(200);
      expect(calls.n).toBe(5);
      expect(r.body.stopped).toBe("rate_limited");
    } finally {
      await gh.close();
    }
  }, 60_000);
});
