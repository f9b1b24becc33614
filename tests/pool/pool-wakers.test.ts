/**
 * The pool's wakers (actors/pool/wakers.ts): a wake due now ends the sentinel's sleep without a
 * timer, so a task enqueued by a route of this process is claimed at once, not a timer tick later.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { SentinelSleep } from "../../actors/pool/wakers.ts";

afterEach(() => {
  vi.useRealTimers();
});

const flushMicrotasks = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe("SentinelSleep", () => {
  it("wakeIn(0) ends the sleep at once, with no timer left to fire", async () => {
    vi.useFakeTimers();
    const sleep = new SentinelSleep();
    let woke = false;
    void sleep.sleep(60_000).then(() => (woke = true));
    sleep.wakeIn(0);
    await flushMicrotasks();
    // No timer was advanced: a wake that waited for setTimeout(0) would still be asleep here.
    expect(woke).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("wakeIn(ms > 0) shortens the sleep to that timer, and a later wake does not lengthen it", async () => {
    vi.useFakeTimers();
    const sleep = new SentinelSleep();
    let woke = false;
    void sleep.sleep(60_000).then(() => (woke = true));
    sleep.wakeIn(50);
    sleep.wakeIn(5_000);
    await vi.advanceTimersByTimeAsync(49);
    expect(woke).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(woke).toBe(true);
  });

  it("a wake with no sleep running does nothing, and the next sleep sleeps its full time", async () => {
    vi.useFakeTimers();
    const sleep = new SentinelSleep();
    sleep.wakeIn(0);
    let woke = false;
    void sleep.sleep(100).then(() => (woke = true));
    await vi.advanceTimersByTimeAsync(99);
    expect(woke).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(woke).toBe(true);
  });
});
