/**
 * The worker pool's idle machine (actors/pool/idle.ts): every transition
 * walked with its expected state, effects and answer to the loop; then
 * seeded random runs of a pool of loops driven through the machine, with
 * the header's invariants checked after every step.
 */
import { describe, expect, it } from "vitest";
import {
  type IdleConfig,
  type IdleEvent,
  type IdleState,
  type IdleStep,
  idleTransition,
  initialIdleState,
} from "../../actors/pool/idle.ts";

const config: IdleConfig = { pollMs: 100, maxWaitMs: 800, listenMaxMs: 60_000 };
const base = (over: Partial<IdleState> = {}): IdleState => ({ ...initialIdleState(config), running: true, ...over });
const none = { phase: "none" } as const;
const polling = { phase: "polling", waitMs: 400 } as const;
const sleeping = { phase: "sleeping" } as const;
const go = (s: IdleState, e: IdleEvent): IdleStep => idleTransition(s, e, config);

describe("idle machine: every transition", () => {
  // Long because: one case per event kind of the machine, each from the sentinel phases that matter.
  it("start and stop", () => {
    const started = go({ ...initialIdleState(config), backoffMs: 800, listening: true }, { type: "start" });
    expect(started).toEqual({ state: { ...initialIdleState(config), running: true }, effects: [], next: "none" });
    // stop: every parked loop is woken, the sleep ends, and a loop between poll and sleep polls (and sees !running).
    const stopped = go(base({ parked: 3, sentinel: sleeping, wakes: 4, listening: true }), { type: "stop" });
    expect(stopped.state).toMatchObject({ running: false, listening: false, parked: 0, wakes: 5 });
    expect(stopped.effects).toEqual([{ type: "wakeAllParked" }, { type: "endSleep" }]);
    expect(go(base({ parked: 1, sentinel: polling }), { type: "stop" }).effects).toEqual([{ type: "wakeAllParked" }]);
  });

  it("wake: ends the sleep, else wakes one parked loop, else is counted; the backoff starts over", () => {
    const asleep = go(base({ sentinel: sleeping, parked: 5, backoffMs: 800, wakes: 2 }), { type: "wake" });
    expect(asleep.state).toMatchObject({ parked: 5, backoffMs: 100, wakes: 3 });
    expect(asleep.effects).toEqual([{ type: "endSleep" }]);
    const whilePolling = go(base({ sentinel: polling, parked: 5, backoffMs: 800 }), { type: "wake" });
    expect(whilePolling.state).toMatchObject({ parked: 4, backoffMs: 100, wakes: 1 });
    expect(whilePolling.effects).toEqual([{ type: "wakeParked" }]);
    const nobody = go(base({ sentinel: none, parked: 0 }), { type: "wake" });
    expect(nobody.state).toMatchObject({ wakes: 1 });
    expect(nobody.effects).toEqual([]);
  });

  it("claimed: one parked sibling is woken, the backoff starts over, wakes is not counted", () => {
    const r = go(base({ parked: 2, backoffMs: 400 }), { type: "claimed" });
    expect(r.state).toMatchObject({ parked: 1, backoffMs: 100, wakes: 0 });
    expect(r.effects).toEqual([{ type: "wakeParked" }]);
    expect(go(base({ parked: 0, backoffMs: 400 }), { type: "claimed" }).effects).toEqual([]);
  });

  it("bell: ignored when stopped or held elsewhere; due now wakes; later shortens the sleep, else is counted", () => {
    expect(go(base({ running: false, sentinel: sleeping }), { type: "bell", dueInMs: 0, heldElsewhere: false }).effects).toEqual([]);
    expect(go(base({ sentinel: sleeping }), { type: "bell", dueInMs: 0, heldElsewhere: true })).toEqual({ state: base({ sentinel: sleeping }), effects: [], next: "none" });
    expect(go(base({ sentinel: sleeping }), { type: "bell", dueInMs: -5, heldElsewhere: false }).effects).toEqual([{ type: "endSleep" }]);
    const later = go(base({ sentinel: sleeping, backoffMs: 400 }), { type: "bell", dueInMs: 250, heldElsewhere: false });
    expect(later.effects).toEqual([{ type: "shortenSleep", ms: 250 }]);
    expect(later.state).toEqual(base({ sentinel: sleeping, backoffMs: 400 }));
    const heardWhilePolling = go(base({ sentinel: polling }), { type: "bell", dueInMs: 250, heldElsewhere: false });
    expect(heardWhilePolling.state.wakes).toBe(1);
    expect(heardWhilePolling.effects).toEqual([]);
  });

  it("listening: on polls once (a wake), off cuts the sleep to the backoff", () => {
    const on = go(base({ sentinel: sleeping }), { type: "listening", on: true });
    expect(on.state).toMatchObject({ listening: true, wakes: 1 });
    expect(on.effects).toEqual([{ type: "endSleep" }]);
    const off = go(base({ sentinel: sleeping, listening: true, backoffMs: 200 }), { type: "listening", on: false });
    expect(off.state.listening).toBe(false);
    expect(off.effects).toEqual([{ type: "shortenSleep", ms: 200 }]);
    expect(go(base({ sentinel: polling, listening: true }), { type: "listening", on: false }).effects).toEqual([]);
    expect(go(base({ running: false }), { type: "listening", on: true })).toEqual({ state: base({ running: false, listening: true }), effects: [], next: "none" });
  });

  it("empty records whether an agent of another definition set is due", () => {
    expect(go(base(), { type: "empty", foreign: true }).state.foreignDue).toBe(true);
    expect(go(base({ foreignDue: true }), { type: "empty", foreign: false }).state.foreignDue).toBe(false);
  });

  it("idle: a wake since the poll started polls again; a sentinel exists: park (checkDue after work while it sleeps)", () => {
    expect(go(base({ wakes: 2 }), { type: "idle", seen: 1, afterWork: false, noneHeldElsewhere: true }).next).toBe("poll");
    expect(go(base({ running: false }), { type: "idle", seen: 0, afterWork: false, noneHeldElsewhere: true }).next).toBe("poll");
    expect(go(base({ sentinel: polling }), { type: "idle", seen: 0, afterWork: true, noneHeldElsewhere: true }).next).toBe("park");
    expect(go(base({ sentinel: sleeping }), { type: "idle", seen: 0, afterWork: false, noneHeldElsewhere: true }).next).toBe("park");
    expect(go(base({ sentinel: sleeping }), { type: "idle", seen: 0, afterWork: true, noneHeldElsewhere: true }).next).toBe("checkDue");
  });

  it("idle: no sentinel: this loop becomes it; polled bells double the backoff, a listening watch waits listenMaxMs", () => {
    const polled = go(base({ backoffMs: 100 }), { type: "idle", seen: 0, afterWork: false, noneHeldElsewhere: true });
    expect(polled).toEqual({ state: base({ backoffMs: 200, sentinel: { phase: "polling", waitMs: 100 } }), effects: [], next: "sentinel", readDue: true });
    expect(go(base({ backoffMs: 800 }), { type: "idle", seen: 0, afterWork: false, noneHeldElsewhere: true }).state.backoffMs).toBe(800);
    const pushed = go(base({ listening: true, backoffMs: 200 }), { type: "idle", seen: 0, afterWork: false, noneHeldElsewhere: true });
    expect(pushed.state).toMatchObject({ backoffMs: 200, sentinel: { phase: "polling", waitMs: 60_000 } });
    // A target held elsewhere, or a foreign agent due: polled (and a foreign agent's due time is not read).
    const held = go(base({ listening: true, backoffMs: 200 }), { type: "idle", seen: 0, afterWork: false, noneHeldElsewhere: false });
    expect(held.state).toMatchObject({ backoffMs: 400, sentinel: { phase: "polling", waitMs: 200 } });
    const foreign = go(base({ listening: true, foreignDue: true }), { type: "idle", seen: 0, afterWork: false, noneHeldElsewhere: true });
    expect(foreign).toMatchObject({ next: "sentinel", readDue: false, state: { sentinel: { phase: "polling", waitMs: 100 } } });
  });

  it("park: counted unless a wake came since the poll or the pool stopped; parkFor always; parkTimedOut uncounts", () => {
    expect(go(base({ wakes: 3 }), { type: "park", seen: 3 })).toEqual({ state: base({ wakes: 3, parked: 1 }), effects: [], next: "park" });
    expect(go(base({ wakes: 3 }), { type: "park", seen: 2 })).toEqual({ state: base({ wakes: 3 }), effects: [], next: "poll" });
    expect(go(base({ running: false }), { type: "park", seen: 0 }).next).toBe("poll");
    expect(go(base({ wakes: 3 }), { type: "parkFor" })).toEqual({ state: base({ wakes: 3, parked: 1 }), effects: [], next: "park" });
    expect(go(base({ parked: 2 }), { type: "parkTimedOut" }).state.parked).toBe(1);
  });

  it("due: shortens the sleeping sentinel's sleep, nothing otherwise", () => {
    expect(go(base({ sentinel: sleeping }), { type: "due", dueInMs: 30 }).effects).toEqual([{ type: "shortenSleep", ms: 30 }]);
    expect(go(base({ sentinel: sleeping }), { type: "due", dueInMs: null }).effects).toEqual([]);
    expect(go(base({ sentinel: polling }), { type: "due", dueInMs: 30 }).effects).toEqual([]);
  });

  it("sleep: at most the chosen wait and never past the due time read; a wake while polling cancels it", () => {
    expect(go(base({ sentinel: polling }), { type: "sleep", seen: 0, dueInMs: null }))
      .toEqual({ state: base({ sentinel: sleeping }), effects: [{ type: "sleep", ms: 400 }], next: "sleep" });
    expect(go(base({ sentinel: polling }), { type: "sleep", seen: 0, dueInMs: 7 }).effects).toEqual([{ type: "sleep", ms: 7 }]);
    expect(go(base({ sentinel: polling }), { type: "sleep", seen: 0, dueInMs: 9_000 }).effects).toEqual([{ type: "sleep", ms: 400 }]);
    expect(go(base({ sentinel: polling, wakes: 1 }), { type: "sleep", seen: 0, dueInMs: null }))
      .toEqual({ state: base({ wakes: 1 }), effects: [], next: "poll" });
    expect(go(base({ sentinel: polling, running: false }), { type: "sleep", seen: 0, dueInMs: null }).next).toBe("poll");
  });

  it("woke: the sentinel is gone", () => {
    expect(go(base({ sentinel: sleeping }), { type: "woke" }).state.sentinel).toEqual(none);
  });
});

/** mulberry32: a fixed seed gives the same run every time. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type LoopStatus = "active" | "polling" | "checkingDue" | "sentinelPolling" | "sleeping" | "parked" | "timedPark";
interface SimLoop {
  status: LoopStatus;
  seen: number;
  afterWork: boolean;
  /** A wake the machine must not lose came since this loop's poll started. */
  heard: boolean;
}

/** Drives the machine as the pool does (one loop's step at a time, or an outside event), checking the invariants. */
function simulate(seed: number, loopCount: number, steps: number): { sleeps: number; parks: number; sentinels: number } {
  // Long because: it plays the pool's part for every loop status (the shell the machine's answers drive), and the invariants are checked where each answer is given.
  const rand = rng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  let s = idleTransition(initialIdleState(config), { type: "start" }, config).state;
  const loops: SimLoop[] = Array.from({ length: loopCount }, () => ({ status: "active", seen: 0, afterWork: false, heard: false }));
  /** Parked loops, oldest first (the pool's ParkedLoops). */
  let queue: number[] = [];
  let lastDueRead: number | null = null;
  const counts = { sleeps: 0, parks: 0, sentinels: 0 };

  const send = (e: IdleEvent): IdleStep => {
    const before = s;
    const r = idleTransition(s, e, config);
    s = r.state;
    // Invariant `mail-until-acked`: one wake at most per event; 7: stop wakes all.
    expect(r.effects.filter((f) => f.type === "wakeParked").length).toBeLessThanOrEqual(1);
    const bumps = r.state.wakes > before.wakes;
    if (bumps) for (const l of loops) if (["polling", "checkingDue", "sentinelPolling"].includes(l.status)) l.heard = true;
    for (const f of r.effects) {
      if (f.type === "wakeParked") loops[queue.shift()!].status = "active";
      if (f.type === "handParked") {
        // The hand-over rule (idle.ts): the loop parked longest, handed a claim: that claim is its poll, started now.
        const l = loops[queue.shift()!];
        Object.assign(l, { status: "polling", seen: r.state.wakes, heard: false });
      }
      if (f.type === "wakeAllParked") {
        for (const i of queue) loops[i].status = "active";
        queue = [];
      }
      if (f.type === "sleep") {
        counts.sleeps++;
        // Invariant `first-result-wins` and `first-idempotency-key`: bounded by the listen bound and by the due time just read.
        expect(f.ms).toBeLessThanOrEqual(Math.max(config.listenMaxMs, config.maxWaitMs));
        if (lastDueRead !== null) expect(f.ms).toBeLessThanOrEqual(lastDueRead);
      }
    }
    return r;
  };
  const park = (i: number, seen: number) => {
    const r = send({ type: "park", seen });
    // Invariant `fencing`: a loop that heard a wake since its poll started polls again.
    if (loops[i].heard) expect(r.next).toBe("poll");
    if (r.next === "park") {
      // Invariant `exclusive-claims`: a loop parks only while a sentinel exists (or at start, loop 0 polls).
      expect(s.sentinel.phase !== "none" || loops.some((l, j) => j !== i && l.status !== "parked")).toBe(true);
      loops[i].status = "parked";
      queue.push(i);
      counts.parks++;
    } else loops[i].status = "active";
  };

  // At start, loops other than the first park.
  for (let i = 1; i < loopCount; i++) park(i, s.wakes);

  for (let n = 0; n < steps && s.running; n++) {
    const outside = rand() < 0.3;
    if (outside) {
      const kind = pick(["wake", "bell", "bell", "listening", "listening", "handOver"] as const);
      if (kind === "wake") send({ type: "wake" });
      else if (kind === "handOver") {
        const before = s;
        const r = send({ type: "handOver" });
        // The hand-over rule (idle.ts): one parked loop at most, never the sentinel, no wake counted.
        expect(r.effects).toEqual(before.running && before.parked > 0 ? [{ type: "handParked" }] : []);
        expect(r.state.wakes).toBe(before.wakes);
        expect(r.state.sentinel).toEqual(before.sentinel);
      }
      else if (kind === "bell") send({ type: "bell", dueInMs: pick([0, -1, 50, 5_000]), heldElsewhere: rand() < 0.2 });
      else send({ type: "listening", on: rand() < 0.6 });
    } else {
      const movable = loops.map((l, i) => [l, i] as const).filter(([l]) => l.status !== "parked");
      if (movable.length === 0) {
        // Only a timed park can be the pool's last waker; a loop parked without a timer always has one.
        expect(queue.some((i) => loops[i].status === "timedPark")).toBe(true);
        continue;
      }
      const [l, i] = pick(movable);
      if (l.status === "active") {
        l.status = "polling";
        l.seen = s.wakes;
        l.heard = false;
      } else if (l.status === "polling") {
        const outcome = pick(["claimed", "empty", "empty", "empty", "error"] as const);
        if (outcome === "claimed") {
          send({ type: "claimed" });
          l.status = "active";
          l.afterWork = true;
        } else if (outcome === "error") {
          send({ type: "parkFor" });
          l.status = "timedPark";
          queue.push(i);
        } else {
          send({ type: "empty", foreign: rand() < 0.15 });
          const wasSentinel = s.sentinel.phase !== "none";
          const r = send({ type: "idle", seen: l.seen, afterWork: l.afterWork, noneHeldElsewhere: rand() < 0.85 });
          l.afterWork = false;
          if (l.heard) expect(r.next).toBe("poll");
          // Invariant `inbox-is-truth`: one sentinel at most.
          if (wasSentinel) expect(r.next).not.toBe("sentinel");
          if (r.next === "poll") l.status = "active";
          else if (r.next === "park") park(i, l.seen);
          else if (r.next === "checkDue") l.status = "checkingDue";
          else if (r.next === "sentinel") {
            l.status = "sentinelPolling";
            counts.sentinels++;
          }
        }
      } else if (l.status === "checkingDue") {
        send({ type: "due", dueInMs: pick([null, 20, 3_000]) });
        park(i, l.seen);
      } else if (l.status === "sentinelPolling") {
        lastDueRead = pick([null, 30, 100_000]);
        const r = send({ type: "sleep", seen: l.seen, dueInMs: lastDueRead });
        lastDueRead = null;
        if (l.heard) expect(r.next).toBe("poll");
        l.status = r.next === "sleep" ? "sleeping" : "active";
      } else if (l.status === "sleeping") {
        // Its timer fired (or a wake ended it).
        send({ type: "woke" });
        l.status = "active";
      } else if (l.status === "timedPark") {
        queue = queue.filter((j) => j !== i);
        send({ type: "parkTimedOut" });
        l.status = "active";
      }
    }
    // After every step: the machine's counts match the loops, one sentinel at most, the backoff in bounds.
    expect(s.parked).toBe(queue.length);
    const sentinelLoops = loops.filter((x) => x.status === "sentinelPolling" || x.status === "sleeping").length;
    expect(sentinelLoops).toBe(s.sentinel.phase === "none" ? 0 : 1);
    expect(sentinelLoops <= 1).toBe(true);
    expect(s.backoffMs).toBeGreaterThanOrEqual(config.pollMs);
    expect(s.backoffMs).toBeLessThanOrEqual(config.maxWaitMs);
    // Invariant `exclusive-claims`: while running, not every loop waits on a waker without a timer.
    expect(loops.filter((x) => x.status === "parked").length).toBeLessThan(loopCount);
  }
  // Invariant `write-once-verdicts`: stop wakes every parked loop; then nothing parks or sleeps.
  const r = send({ type: "stop" });
  expect(queue).toEqual([]);
  expect(loops.some((x) => x.status === "parked" || x.status === "timedPark")).toBe(false);
  expect(r.state.parked).toBe(0);
  expect(idleTransition(s, { type: "park", seen: s.wakes }, config).next).toBe("poll");
  return counts;
}

describe("idle machine: invariants over seeded random runs", () => {
  for (const [seed, loopsN] of [[1, 1], [2, 2], [3, 8], [4, 64], [5, 3]] as const) {
    it(`seed ${seed}, ${loopsN} loops`, () => {
      const c = simulate(seed, loopsN, 4_000);
      // The run went through the interesting states (the checks above were exercised).
      expect(c.sentinels).toBeGreaterThan(10);
      expect(c.sleeps).toBeGreaterThan(0);
      if (loopsN > 1) expect(c.parks).toBeGreaterThan(10);
    });
  }
});
