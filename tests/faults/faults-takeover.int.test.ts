/**
 * A crashed worker's agent resumes within the documented time
 * (docs/operations.md, "Leases and takeover": at most about `leaseMs` +
 * `pollMs` after the crash), and the worker that takes it over says so in one
 * `lease_takeover` info line naming the dead holder and how long the agent
 * waited after the dead lease ran out. Real processes (SIGKILL), real Redis.
 */
import { describe, expect, it } from "vitest";
import { useRedisServer } from "../helpers/redis.ts";
import { measureTakeover } from "../helpers/takeover.ts";

const redis = useRedisServer();

const LEASE_MS = 1_500;
const POLL_MS = 100;
/** Process scheduling on a loaded machine: what the bound may be late by. */
const SLACK_MS = 400;

describe("faults: takeover after a killed worker", () => {
  it("another worker claims the agent within leaseMs + pollMs of the kill, logs lease_takeover, and the turn ends done", async () => {
    const run = await measureTakeover({ redisUrl: redis.url, leaseMs: LEASE_MS, pollMs: POLL_MS });
    expect(run.takeoverMs).toBeLessThanOrEqual(LEASE_MS + POLL_MS + SLACK_MS);
    // The lease the dead worker left was renewed at least once a third of a lease before the kill.
    expect(run.takeoverMs).toBeGreaterThanOrEqual((LEASE_MS * 2) / 3 - SLACK_MS);
    expect(run.line).toMatchObject({ level: "info", msg: "lease_takeover", agentId: "agent-takeover" });
    expect(String(run.line.previousWorker)).toMatch(/^w_[0-9a-f]+\/0$/);
    expect(run.line.workerId).not.toBe(run.line.previousWorker);
    expect(run.line.waitedMs as number).toBeGreaterThanOrEqual(0);
    expect(run.line.waitedMs as number).toBeLessThanOrEqual(POLL_MS + SLACK_MS);
    expect(run.line.sinceLastWriteMs as number).toBeGreaterThanOrEqual(run.line.waitedMs as number);
    expect(run.line.sinceLastWriteMs as number).toBeLessThanOrEqual(LEASE_MS + POLL_MS + SLACK_MS);
  }, 60_000);
});
