/**
 * The event log's stored form (common/event-form.ts, machines/event-log.ts
 * "Stored form and served form"):
 * - a log written before it (tests/fixtures/event-log-v1: every event whole),
 *   as the memory store and Redis held it, serves the same agent, event
 *   pages, SSE stream, history at every event (replay) and replay bundle as
 *   it did then;
 * - the same run written now (compact events) serves exactly the same, and
 *   its stored events, expanded, are the old log's events byte for byte;
 * - an old log goes on in the new form and still reads and replays;
 * - a log written in format 2 (tests/fixtures/event-log-v2: compact events,
 *   the snapshot stored whole) serves the same as it did then, and goes on;
 * - it stores fewer bytes of events per step.
 * A log written now differs from those in two ways only: every committed
 * transition carries its commit mark (`commit: { index, count }`,
 * actors/claim/commit-buffer.ts), so the history at an event is the agent
 * at the end of its commit (`throughEventId`; actors/replay/commit-point.ts);
 * and what a caller did over HTTP records who did it (`by`, common/by.ts: the
 * run's tool result, delivered without auth, carries `by: null` on its
 * `tool_result_received` event and its call's record).
 * A run written now also spends no commit on a turn's start (store/port.ts invariant
 * `turn-start`; the fixtures were written while each turn's start was a commit of its own): its
 * events are the same, the head's `version` (and the last commit's token, which names the
 * version it expected) is the fixture's less the run's two turns (`START_COMMITS`).
 * `asThen` states those differences exactly: the marks and `by` left out, the history
 * at each event is what the old log answered at `throughEventId`, and an old
 * log (no marks) answers `throughEventId` = the event.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Redis from "ioredis";
import { memoryStore } from "../../mod.ts";
import { loadReplayBundle } from "../../replay.ts";
import type { StoredEvent } from "../../common/events.ts";
import { byIdIn, expandEvents, isCompact } from "../../common/event-form.ts";
import { redisStore } from "../../redis.ts";
import { memoryStoreState } from "../../store/memory.ts";
import { AGENT_ID, fixtureGatehouse, RUN_END, readings as readNow, type Readings, runFixture } from "../helpers/event-log-run.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { RuntimeEvent } from "../../routes/schemas.ts";
import { expandSnapshot } from "../../store/snapshot-form.ts";
import { redisStateReader } from "../helpers/store-state.ts";
import { call } from "../helpers/event-log-run.ts";
import type { Gatehouse } from "../../mod.ts";
import memoryFixture from "../fixtures/event-log-v1/memory.json" with { type: "json" };
import redisFixture from "../fixtures/event-log-v1/redis.json" with { type: "json" };
import memoryFixture2 from "../fixtures/event-log-v2/memory.json" with { type: "json" };
import redisFixture2 from "../fixtures/event-log-v2/redis.json" with { type: "json" };

type Dumped = { type: string; ttl: number; value: unknown };

const bytes = (events: unknown[]) => events.reduce<number>((n, e) => n + new TextEncoder().encode(JSON.stringify(e)).byteLength, 0);
/** Model steps of the run: one `step` started event each. */
const stepsOf = (events: StoredEvent[]) => events.filter((e) => e.type === "step" && e.data.phase === "started").length;

/** The fixture run's turns: each started with a commit of its own when formats 1 and 2 were written, none now. */
const START_COMMITS = 2;

const server = useRedisServer();
let raw: Redis;
beforeAll(async () => {
  raw = new Redis(server.url);
});
afterAll(async () => {
  raw?.disconnect();
});

/**
 * `v` without the commit marks of its transitions and without `by` (on an event's data, or a call's
 * resolution record), in objects and in JSON texts such as SSE `data:` lines and stored list entries.
 */
function unmarked<T>(v: T): T {
  if (typeof v === "string") {
    const m = /^(data: )?(\{.*\})$/s.exec(v);
    if (!m || !(v.includes('"commit"') || v.includes('"by"') || v.includes('"TASK_STARTED"'))) return v;
    return `${m[1] ?? ""}${JSON.stringify(unmarked(JSON.parse(m[2])))}` as T;
  }
  if (Array.isArray(v)) return v.map(unmarked) as T;
  if (v === null || typeof v !== "object") return v;
  const o = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, unmarked(x)])) as Record<string, unknown>;
  if (o.type === "transition" && o.data && typeof o.data === "object" && "commit" in o.data) {
    const { commit: _mark, ...data } = o.data as Record<string, unknown>;
    o.data = data;
  }
  if (typeof o.type === "string" && o.data && typeof o.data === "object" && "by" in o.data) {
    const { by: _by, ...data } = o.data as Record<string, unknown>;
    o.data = data;
  }
  if (o.status === "resolved" && "by" in o) delete o.by;
  // The definition version a turn started under (store/port.ts invariant `turn-versions`): new since these formats.
  if (o.type === "TASK_STARTED" && "version" in o) delete o.version;
  // The active turn's pin in a head (invariant `turn-versions`), also new since.
  if ("versionTurn" in o && "turnVersion" in o) {
    delete o.versionTurn;
    delete o.turnVersion;
  }
  return o as T;
}

/**
 * The readings served now, in the terms of `then` (readings of a log written before the commit mark):
 * marks left out, and the history at each event checked here to be `then`'s at its `throughEventId`
 * shown for the event asked (then answered as `then`'s history, for the caller's whole comparison).
 * `marked`: false for an old log, whose every event is its own point.
 */
async function readings(gh: Gatehouse, then?: Readings, marked = false): Promise<Readings> {
  const now = unmarked(await readNow(gh));
  if (!then) return now;
  if (marked) {
    // Written now: no commit for a turn's start (see the header); everything else of the view and the bundle's head the same.
    const version = (then.agent as { version: number }).version;
    expect((now.agent as { version: number }).version).toBe(version - START_COMMITS);
    expect((now.bundle as { head: { version: number } }).head.version).toBe(version - START_COMMITS);
    now.agent = { ...(now.agent as object), version };
    const bundle = now.bundle as { head: object };
    now.bundle = { ...bundle, head: { ...bundle.head, version } };
  }
  for (const [id, body] of Object.entries(now.history) as Array<[string, Record<string, unknown>]>) {
    const { throughEventId: through, ...rest } = body;
    if (!marked) expect(through, `history at ${id}`).toBe(Number(id));
    expect(Number(through), `history at ${id}`).toBeGreaterThanOrEqual(Number(id));
    const at = then.history[String(through)] as Record<string, unknown>;
    const { state, activeTurnId, context, snapshot, messages, messagesFrom } = at;
    expect(rest, `history at ${id}`).toEqual({ ...(then.history[id] as object), state, activeTurnId, context, snapshot, messages, messagesFrom });
  }
  return { ...now, history: then.history };
}

/** Writes the dumped keys of an agent (tests/helpers/store-state.ts `redisStateReader`) back under `prefix`. */
async function restore(prefix: string, agentId: string, records: Record<string, Dumped>) {
  const tag = `${prefix}:{a:${agentId}}:`;
  for (const [suffix, { type, value }] of Object.entries(records)) {
    const key = tag + suffix;
    if (type === "string") await raw.set(key, value as string);
    else if (type === "hash") await raw.hset(key, value as Record<string, string>);
    else if (type === "list") await raw.rpush(key, ...(value as string[]));
    else if (type === "set") await raw.sadd(key, ...(value as string[]));
    else if (type === "zset") for (const [m, s] of value as [string, string][]) await raw.zadd(key, s, m);
    else throw new Error(`fixture key ${key} has type ${type}`);
  }
}

/**
 * A third turn written now on an old log (the log holds both forms then): every event is served
 * whole (catalogue shapes, no `ref`), and the history at every event replays (200, the last `done`).
 */
async function continueOldLog(gh: Gatehouse) {
  const enq = await call(gh, "POST", `/v1/agents/${AGENT_ID}/tasks`, { agent: "logger", input: { ask: "third" } });
  expect(enq.status, JSON.stringify(enq.body)).toBe(202);
  await gh.drain();
  const events = (await call(gh, "GET", `/v1/agents/${AGENT_ID}/events?limit=500`)).body.events as StoredEvent[];
  expect(events.length).toBeGreaterThan(37);
  for (const e of events) expect(RuntimeEvent.safeParse(e).success, `event ${e.id} ${e.type}`).toBe(true);
  const stored = await gh.store.readEvents(AGENT_ID, 37, 100);
  const calls = stored.filter((e) => e.type === "tool_call" && e.data.name === "crunch");
  expect(calls.length).toBeGreaterThan(0);
  for (const e of calls) expect(e.data.args).toEqual({ n: 5, note: "second turn" });
  for (const e of events) expect((await call(gh, "GET", `/v1/agents/${AGENT_ID}/history/${e.id}`)).status).toBe(200);
  expect((await call(gh, "GET", `/v1/agents/${AGENT_ID}/history/${events.at(-1)!.id}`)).body.state).toBe("done");
}

describe("event log: a log written in format 1 (every event whole)", () => {
  it("memory store: served as before (agent, pages, SSE, history at every event, bundle)", async () => {
    const store = memoryStore();
    // The bundle carries the stored events as they were.
    expect(memoryFixture.readings.bundle.events).toEqual(memoryFixture.records.events);
    expect(loadReplayBundle(store, memoryFixture.readings.bundle)).toBeDefined();
    const { gh, clock } = fixtureGatehouse(store, 2);
    clock.t = RUN_END; // the bundle says when it was exported
    expect(await readings(gh, memoryFixture.readings)).toEqual(memoryFixture.readings);
    await continueOldLog(gh);
    await gh.close();
  });

  it("Redis: the stored keys of then serve as before", async () => {
    await raw.flushall();
    await restore(redisFixture.prefix, AGENT_ID, redisFixture.records as Record<string, Dumped>);
    const store = redisStore({ url: server.url, prefix: redisFixture.prefix });
    const { gh, clock } = fixtureGatehouse(store, 2);
    clock.t = RUN_END;
    expect(await readings(gh, redisFixture.readings)).toEqual(redisFixture.readings);
    await continueOldLog(gh);
    await gh.close();
  });
});

describe("event log: a log written in format 2 (compact events, whole snapshot)", () => {
  it("memory store: served as before (agent, pages, SSE, history at every event, bundle)", async () => {
    const store = memoryStore();
    expect(loadReplayBundle(store, memoryFixture2.readings.bundle)).toBeDefined();
    const { gh, clock } = fixtureGatehouse(store, 2);
    clock.t = RUN_END;
    expect(await readings(gh, memoryFixture2.readings)).toEqual(memoryFixture2.readings);
    await continueOldLog(gh);
    await gh.close();
  });

  it("Redis: the stored keys of then serve as before", async () => {
    await raw.flushall();
    await restore(redisFixture2.prefix, AGENT_ID, redisFixture2.records as Record<string, Dumped>);
    const store = redisStore({ url: server.url, prefix: redisFixture2.prefix });
    const { gh, clock } = fixtureGatehouse(store, 2);
    clock.t = RUN_END;
    expect(await readings(gh, redisFixture2.readings)).toEqual(redisFixture2.readings);
    await continueOldLog(gh);
    await gh.close();
  });
});

describe("the same run written now against format 2 (snapshot without its defaults, commit arguments packed on the wire)", () => {
  it("Redis: every key holds what format 2 held, the snapshot compact and the same once expanded", async () => {
    await raw.flushall();
    const prefix = redisFixture2.prefix;
    const store = redisStore({ url: server.url, prefix });
    const { gh, clock } = fixtureGatehouse(store);
    const before = Number(/total_net_input_bytes:(\d+)/.exec(await raw.info("stats"))![1]);
    await runFixture(gh, clock);
    const after = Number(/total_net_input_bytes:(\d+)/.exec(await raw.info("stats"))![1]);
    const state = await redisStateReader((c) => raw.call(c[0], ...c.slice(1)), prefix)(AGENT_ID);
    const records = state.records as Record<string, Dumped>;
    const old = redisFixture2.records as Record<string, Dumped>;
    expect(Object.keys(records).sort()).toEqual(Object.keys(old).sort());
    // The commit marks are the only bytes of committed events added: the head counts them (`by` is on a
    // store operation's event, which _evBytes does not count).
    const markBytes = (records.events.value as string[]).filter((t) => t.includes('"commit"'))
      .reduce((n, t) => n + t.length - unmarked(t).length, 0);
    expect(markBytes).toBeGreaterThan(0);
    const head = records.head.value as Record<string, string>;
    const oldHead = old.head.value as Record<string, string>;
    expect(Number(head._evBytes)).toBe(Number(oldHead._evBytes) + markBytes);
    // The head gained one field since format 2: the order counter of delayed tasks (store/lua/includes/queue.lua),
    // 0 for a run that queued none.
    // Since then also the pin of the active turn's definition version (store/port.ts invariant `turn-versions`).
    const { _taskSeq, turnVersion, versionTurn, ...headThen } = head;
    expect(_taskSeq).toBe("0");
    expect([JSON.parse(turnVersion), JSON.parse(versionTurn)]).toEqual([expect.stringMatching(/^d[0-9a-f]+$/), "turn_2"]);
    // No commit for a turn's start now: the version, and the last commit's token (`<epoch>:<expected version>:…`), that much lower.
    expect(Number(head.version)).toBe(Number(oldHead.version) - START_COMMITS);
    const [epoch, expected, ...rest] = oldHead._commit.split(":");
    expect(head._commit).toBe([epoch, Number(expected) - START_COMMITS, ...rest].join(":"));
    records.head = { ...records.head, value: { ...headThen, _evBytes: oldHead._evBytes, version: oldHead.version, _commit: oldHead._commit } };
    for (const key of Object.keys(old)) {
      if (key === "head:snapshot") continue;
      expect(unmarked(records[key]), key).toEqual(old[key]);
    }
    const stored = records["head:snapshot"].value as string;
    expect(stored.startsWith('{"~":1,')).toBe(true);
    expect(JSON.stringify(expandSnapshot(JSON.parse(stored)))).toBe(old["head:snapshot"].value);
    expect(stored.length).toBeLessThan((old["head:snapshot"].value as string).length * 0.6);
    expect(await readings(gh, redisFixture2.readings, true)).toEqual(redisFixture2.readings);
    console.log(`bytes to Redis for the fixture run (INFO total_net_input_bytes): ${after - before}`);
    await gh.close();
  });
});

describe("event log: the same run written now (compact events)", () => {
  it("memory store: serves what format 1 served; the stored events expand to format 1's byte for byte; fewer bytes a step", async () => {
    const store = memoryStore();
    const { gh, clock } = fixtureGatehouse(store);
    await runFixture(gh, clock);
    const stored = memoryStoreState(store).agents.find(([id]) => id === AGENT_ID)![1].events as StoredEvent[];
    const old = memoryFixture.records.events as StoredEvent[];
    expect(stored.filter(isCompact).length).toBeGreaterThan(10);
    expect(stored.some((e) => e.type === "transition" && isCompact(e))).toBe(false);
    expect(stored.filter((e) => e.type === "transition").every((e) => e.data.commit !== undefined)).toBe(true);
    expect(unmarked(expandEvents(stored, byIdIn(stored))).map((e) => JSON.stringify(e))).toEqual(old.map((e) => JSON.stringify(e)));
    expect(await readings(gh, memoryFixture.readings, true)).toEqual(memoryFixture.readings);
    const [before, after] = [bytes(old) / stepsOf(old), bytes(stored) / stepsOf(stored)];
    console.log(`event bytes a step (memory store, stored JSON): format 1 ${before.toFixed(0)}, now ${after.toFixed(0)}`);
    expect(after).toBeLessThan(before - 300);
    await gh.close();
  });

  it("Redis: serves what format 1 served; the stored list expands to format 1's", async () => {
    await raw.flushall();
    const prefix = redisFixture.prefix;
    const store = redisStore({ url: server.url, prefix });
    const { gh, clock } = fixtureGatehouse(store);
    await runFixture(gh, clock);
    const list = (await raw.lrange(`${prefix}:{a:${AGENT_ID}}:events`, 0, -1)).map((t) => JSON.parse(t) as StoredEvent);
    const old = (redisFixture.records.events.value as string[]).map((t) => JSON.parse(t) as StoredEvent);
    expect(list.filter(isCompact).length).toBeGreaterThan(10);
    expect(unmarked(expandEvents(list, byIdIn(list))).map((e) => JSON.stringify(e))).toEqual(old.map((e) => JSON.stringify(e)));
    expect(await readings(gh, redisFixture.readings, true)).toEqual(redisFixture.readings);
    const before = (redisFixture.records.events.value as string[]).join("").length / stepsOf(old);
    const after = (await raw.lrange(`${prefix}:{a:${AGENT_ID}}:events`, 0, -1)).join("").length / stepsOf(list);
    console.log(`event bytes a step (Redis events list): format 1 ${before.toFixed(0)}, now ${after.toFixed(0)}`);
    expect(after).toBeLessThan(before - 300);
    await gh.close();
  });
});
