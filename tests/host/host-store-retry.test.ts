/**
 * Renewals and commits through a store outage (actors/claim/store-retry.ts): a
 * claim whose commit meets `CLUSTERDOWN`, `TRYAGAIN`, `MOVED` or ioredis's
 * "Too many Cluster redirections" sends it again while its lease lasts,
 * instead of throwing and leaving the agent to a claim after the lease; an
 * error that repeats is thrown at once; the retries end with the lease.
 *
 * A memory store dressed as a Redis store (`kind: "redis"`), whose commit
 * throws what ioredis throws on a Cluster, for as many calls as asked. The
 * same on a real Cluster failing over is tests/store/store-redis-cluster-failover.int.test.ts.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { runClaim } from "../../actors/host/run-claim.ts";
import { defineAgent } from "../../agents/define.ts";
import { isOutageError } from "../../store/outage.ts";
import { memoryStore } from "../../store/memory.ts";
import type { ClaimResult, Store } from "../../store/port.ts";
import { defineTool } from "../../tools/define.ts";
import { manualClock } from "../helpers/clock.ts";
import { enqueue, head, hostDeps, recordingModel } from "../helpers/host.ts";

type Claimed = Extract<ClaimResult, { status: "claimed" }>;

/** An error as ioredis builds a reply error. */
function replyError(message: string): Error {
  const e = new Error(message);
  e.name = "ReplyError";
  return e;
}

/** A memory store that says it is Redis and whose next `failures` commits throw `error()`. */
function flakyStore(failures: number, error: () => Error): Store & { commitCalls: number } {
  const inner = memoryStore();
  let left = failures;
  const s = Object.create(inner) as Store & { commitCalls: number };
  Object.defineProperty(s, "kind", { value: "redis" });
  s.commitCalls = 0;
  s.commit = async (req) => {
    s.commitCalls++;
    if (left > 0) {
      left--;
      throw error();
    }
    return inner.commit(req);
  };
  return s;
}

function setup() {
  const runs: string[] = [];
  const charge = defineTool({
    name: "charge",
    description: "Charge once",
    parameters: z.object({}),
    execute: (_args, ctx) => (runs.push(ctx.toolCallId), "charged"),
  });
  const model = recordingModel((req) =>
    req.step === 1 ? { toolCalls: [{ id: "c1", name: "charge", args: {} }] } : { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] }
  );
  return { runs, agent: defineAgent({ name: "payer", instructions: "", model, tools: [charge] }) };
}

async function claim(store: Store, agentId: string, leaseMs: number, now: number): Promise<Claimed> {
  const c = await store.claim({ agentId, workerId: "A", leaseMs, now });
  if (c.status !== "claimed") throw new Error(`expected a claim, got ${c.status}`);
  return c;
}

describe("renewals and commits retried through a store outage", () => {
  it("Cluster replies and redirection errors are outages, never poison", () => {
    for (const m of ["CLUSTERDOWN The cluster is down", "TRYAGAIN Multiple keys request during rehashing of slot", "MOVED 3999 127.0.0.1:6381", "ASK 3999 127.0.0.1:6381"]) {
      expect(isOutageError(replyError(m), "redis")).toBe(true);
    }
    expect(isOutageError(new Error("Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down"), "redis")).toBe(true);
    expect(isOutageError(replyError("ERR Error running script"), "redis")).toBe(false);
    expect(isOutageError(replyError("CLUSTERDOWN The cluster is down"), "memory")).toBe(false);
  });

  it("a commit refused with CLUSTERDOWN, TRYAGAIN and redirections is sent again and applies: the turn goes on in this claim", { timeout: 30_000 }, async () => {
    const clock = manualClock();
    const errors = [
      () => replyError("CLUSTERDOWN The cluster is down"),
      () => new Error("Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down"),
      () => replyError("TRYAGAIN Multiple keys request during rehashing of slot"),
    ];
    let n = 0;
    const store = flakyStore(3, () => errors[n++ % errors.length]());
    const { agent, runs } = setup();
    await enqueue(store, clock, "r1", agent, "go");
    const out = await runClaim(hostDeps(store, [agent], clock), await claim(store, "r1", 30_000, clock.now()), "A");
    expect(out).toMatchObject({ status: "released", state: "done" });
    expect(runs).toEqual(["c1"]);
    expect(store.commitCalls).toBeGreaterThanOrEqual(3 + 2);
    expect((await head(store, "r1")).state).toBe("done");
  });

  it("an error that repeats is not retried", { timeout: 30_000 }, async () => {
    const clock = manualClock();
    const store = flakyStore(1, () => replyError("ERR Error running script (call to f_x): bad"));
    const { agent } = setup();
    await enqueue(store, clock, "r2", agent, "go");
    await expect(runClaim(hostDeps(store, [agent], clock), await claim(store, "r2", 30_000, clock.now()), "A")).rejects.toThrow(/ERR Error running script/);
    expect(store.commitCalls).toBe(1);
  });

  it("the retries end with the lease: an outage longer than the lease fails the claim as before", { timeout: 30_000 }, async () => {
    const clock = manualClock();
    const store = flakyStore(Number.MAX_SAFE_INTEGER, () => replyError("CLUSTERDOWN The cluster is down"));
    const { agent } = setup();
    await enqueue(store, clock, "r3", agent, "go");
    // The clock stands still: the real-time bound (one lease, 300 ms) ends the retries.
    await expect(runClaim(hostDeps(store, [agent], clock, { leaseMs: 300 }), await claim(store, "r3", 300, clock.now()), "A")).rejects.toThrow(/CLUSTERDOWN/);
    expect(store.commitCalls).toBeGreaterThan(1);
    expect(store.commitCalls).toBeLessThan(10);
  });
});
