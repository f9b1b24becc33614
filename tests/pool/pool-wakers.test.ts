/**
 * The pool's wakers (actors/pool/wakers.ts): a wake due now ends the sentinel's sleep without a
 * timer, so a task enqueued by a route of this process is claimed at once, not a timer tick later.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { ParkedLoops, SentinelSleep } from "../../actors/pool/wakers.ts";

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

describe("ParkedLoops.handFirst (the pool's hand-over)", () => {
  it("wakes the loop parked longest with the gift built for its id, and only that one; none parked: false", async () => {
    vi.useFakeTimers();
    const parked = new ParkedLoops<string>();
    const got: Array<string | undefined> = [];
    void parked.park(undefined, undefined, "loop/1").then((g) => got.push(g));
    void parked.park(1_000, undefined, "loop/2").then((g) => got.push(g));
    expect(parked.handFirst((id) => `claim for ${id}`)).toBe(true);
    await flushMicrotasks();
    expect(got).toEqual(["claim for loop/1"]);
    expect(parked.size).toBe(1);
    expect(parked.handFirst((id) => `claim for ${id}`)).toBe(true);
    await flushMicrotasks();
    // The timed park's timer was cleared with it: nothing fires later.
    expect(got).toEqual(["claim for loop/1", "claim for loop/2"]);
    expect(vi.getTimerCount()).toBe(0);
    expect(parked.handFirst(() => "none")).toBe(false);
  });

  it("a gift that cannot be built still wakes its loop (without one), so no loop is left out of the queue asleep", async () => {
    const parked = new ParkedLoops<string>();
    let woke: string | undefined | null = null;
    void parked.park().then((g) => (woke = g));
    expect(() => parked.handFirst(() => { throw new Error("no"); })).toThrow("no");
    await flushMicrotasks();
    expect(woke).toBeUndefined();
    expect(parked.size).toBe(0);
  });
});
