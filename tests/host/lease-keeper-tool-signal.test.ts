/**
 * The tool signal of a claim (actors/claim/lease-keeper.ts) is made at its
 * first read. Invariant: whenever it is first read, it is the signal the
 * header describes: one signal per claim, fired with the attempt's abort and
 * never before it (one read after the abort fired finds it fired), and
 * reading `aborted` past the confirmed lease end aborts the attempt.
 */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../actors/runtime.ts";
import { startLeaseKeeper } from "../../actors/claim/lease-keeper.ts";
import { memoryStore } from "../../store/memory.ts";
import { manualClock } from "../helpers/clock.ts";

function keeper() {
  const clock = manualClock();
  const abort = new AbortController();
  const lease = startLeaseKeeper({
    store: memoryStore(), clock, logger: silentLogger, agentId: "a1", workerId: "w1", epoch: 1,
    leaseMs: 30_000, leaseUntil: clock.now() + 30_000, abort, claimedMail: 0, commits: () => 0,
  });
  return { clock, abort, lease };
}

describe("the tool signal, made at its first read", () => {
  it("is one signal per claim, fired with the abort and not before", () => {
    const { abort, lease } = keeper();
    const s = lease.toolSignal;
    expect(lease.toolSignal).toBe(s);
    expect(s.aborted).toBe(false);
    let fired = 0;
    s.addEventListener("abort", () => fired++);
    abort.abort();
    expect(s.aborted).toBe(true);
    expect(fired).toBe(1);
    lease.stop();
  });

  it("first read after the abort fired: it is fired", () => {
    const { abort, lease } = keeper();
    abort.abort();
    const s = lease.toolSignal;
    expect(s.aborted).toBe(true);
    expect(() => s.throwIfAborted()).toThrow();
    lease.stop();
  });

  it("reading it past the lease end aborts the attempt, read first before or after the end", () => {
    for (const readFirst of [true, false]) {
      const { clock, abort, lease } = keeper();
      if (readFirst) expect(lease.toolSignal.aborted).toBe(false);
      clock.advance(30_000);
      expect(abort.signal.aborted).toBe(false);
      expect(lease.toolSignal.aborted).toBe(true);
      expect(abort.signal.aborted).toBe(true);
      lease.stop();
    }
  });
});
