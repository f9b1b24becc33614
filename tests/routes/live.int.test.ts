/**
 * See the agent think: model text reaches SSE readers as it streams
 * (`event: delta`, no id; docs/http.md "Live deltas"), stored events reach
 * readers in other gatehouse instances when the log grows (pushed, not
 * polled), and `Prefer: wait` answers a task with its turn's end.
 *
 * Every store is real: memory, a redis-server (a worker instance and a
 * reader instance with no worker, each with its own connection), and the
 * Upstash REST bridge in front of that server.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, type Gatehouse, type Model, type Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { upstashStore } from "../../store/upstash.ts";
import { memoryStore } from "../../store/memory.ts";
import { configFromEnv } from "../../entry/config.ts";
import { DefinitionError } from "../../errors/errors.ts";
import { DELTA_BATCH_MS, DeltaBatcher, decodeLive, type LiveMessage, processLive } from "../../store/live.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { startUpstashBridge, type UpstashBridge } from "../helpers/upstash-bridge.ts";
import { jsonRequest } from "../helpers/http.ts";

const PIECES = 10;
const SPAN_MS = 1_500;

/** A model that streams PIECES deltas over SPAN_MS; `seenAtReturn()` is what the reader had when it returned. */
function slowModel(seen: () => number) {
  let atReturn = -1;
  const model: Model = {
    name: "slow",
    async generate(req) {
      let text = "";
      for (let i = 0; i < PIECES; i++) {
        await new Promise((r) => setTimeout(r, SPAN_MS / PIECES));
        const piece = `piece${i} `;
        text += piece;
        req.onChunk?.(piece);
      }
      atReturn = seen();
      return { text };
    },
  };
  return { model, seenAtReturn: () => atReturn };
}

interface Frame {
  id?: string;
  event?: string;
  data?: string;
}

/** Reads SSE frames from a stream into `frames` until `stop()`. */
function readFrames(res: Response) {
  const frames: Frame[] = [];
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = "";
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let i: number;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const f: Frame = {};
        for (const line of block.split("\n")) {
          const m = /^(id|event|data): ?(.*)$/.exec(line);
          if (m) f[m[1] as keyof Frame] = m[2];
        }
        if (f.event || f.data) frames.push(f);
      }
    }
  })();
  return {
    frames,
    deltas: () => frames.filter((f) => f.event === "delta"),
    async until(pred: () => boolean, ms = 30_000) {
      const t0 = Date.now();
      while (!pred()) {
        if (Date.now() - t0 > ms) throw new Error(`timed out; frames: ${frames.map((f) => f.event).join(",")}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async stop() {
      stopped = true;
      await reader.cancel().catch(() => {});
      await done;
    },
  };
}

const post = (gh: Gatehouse, agentId: string, body: unknown, headers: Record<string, string> = {}) =>
  gh.fetch(jsonRequest("POST", `/v1/agents/${agentId}/tasks`, body, headers, "http://x"));

const openStream = (gh: Gatehouse, agentId: string) =>
  gh.fetch(new Request(`http://x/v1/agents/${agentId}/events?format=sse`));

/**
 * The scenario on one store pair: the worker instance runs the turn, the
 * reader instance (another store client, no worker) serves the SSE stream.
 */
async function deltasBeforeReturn(worker: (model: Model) => Gatehouse, reader: (model: Model) => Gatehouse, agentId: string) {
  let sse: ReturnType<typeof readFrames> | null = null;
  const { model, seenAtReturn } = slowModel(() => sse?.deltas().length ?? 0);
  const w = worker(model);
  const r = reader(model);
  try {
    sse = readFrames(await openStream(r, agentId));
    // Let the reader subscribe before the turn starts.
    await new Promise((res) => setTimeout(res, 200));
    const res = await post(w, agentId, { agent: "slow", input: "go" });
    expect(res.status).toBe(202);
    w.startWorker();
    await sse.until(() => sse!.frames.some((f) => f.event === "task"));
    const deltas = sse.deltas();
    expect(seenAtReturn()).toBeGreaterThanOrEqual(5);
    for (const d of deltas) expect(d.id).toBeUndefined();
    const data = deltas.map((d) => JSON.parse(d.data!) as { turnId: string; step: number; text: string });
    for (const d of data) expect(Object.keys(d).sort()).toEqual(["step", "text", "turnId"]);
    const text = Array.from({ length: PIECES }, (_, i) => `piece${i} `).join("");
    // In order and complete, and the stored chunk events are still the record.
    expect(data.map((d) => d.text).join("")).toBe(text);
    const chunks = sse.frames.filter((f) => f.event === "chunk").map((f) => JSON.parse(f.data!).data.text as string);
    expect(chunks.join("")).toBe(text);
    expect(new Set(data.map((d) => d.step))).toEqual(new Set([JSON.parse(sse.frames.find((f) => f.event === "chunk")!.data!).data.step]));
  } finally {
    await sse?.stop();
    await w.close();
    await r.close();
  }
}

const agent = (model: Model) => defineAgent({ name: "slow", instructions: "think aloud", model });

describe("live deltas", () => {
  const redis = useRedisServer({}, 60_000);
  let bridge: UpstashBridge;
  beforeAll(async () => {
    bridge = await startUpstashBridge({ redisUrl: redis.url });
  }, 60_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it("memory: an SSE reader sees >= 5 delta frames before the model call returns", async () => {
    const store: Store = memoryStore();
    // One process: the reader is the same instance (the memory store lives in it).
    let gh: Gatehouse | null = null;
    const make = (model: Model) => (gh ??= createGatehouse({ agents: [agent(model)], store }));
    await deltasBeforeReturn(make, make, "mem1");
  }, 60_000);

  it("redis: a reader instance with no worker sees >= 5 delta frames before the call returns", async () => {
    const prefix = "live1";
    await deltasBeforeReturn(
      (model) => createGatehouse({ agents: [agent(model)], store: redisStore({ url: redis.url, prefix }) }),
      (model) => createGatehouse({ agents: [agent(model)], store: redisStore({ url: redis.url, prefix }) }),
      "r1",
    );
  }, 60_000);

  it("upstash (REST bridge): a reader instance with no worker sees >= 5 delta frames before the call returns", async () => {
    const prefix = "live2";
    const up = () => upstashStore({ url: bridge.url, token: bridge.token, prefix });
    await deltasBeforeReturn(
      (model) => createGatehouse({ agents: [agent(model)], store: up() }),
      (model) => createGatehouse({ agents: [agent(model)], store: up() }),
      "u1",
    );
  }, 60_000);

  it("redis: a stored event reaches a reader in another instance without waiting for a poll", async () => {
    const prefix = "live3";
    const quick: Model = { name: "quick", generate: async () => ({ text: "done" }) };
    const agents = [defineAgent({ name: "slow", instructions: "x", model: quick })];
    const w = createGatehouse({ agents, store: redisStore({ url: redis.url, prefix }) });
    // The reader would poll once a minute: an event in seconds can only have been pushed.
    const r = createGatehouse({ agents, store: redisStore({ url: redis.url, prefix }), sse: { pollMs: 60_000, keepAliveMs: 120_000 } });
    const sse = readFrames(await openStream(r, "p1"));
    try {
      await new Promise((res) => setTimeout(res, 200));
      expect((await post(w, "p1", { agent: "slow", input: "go" })).status).toBe(202);
      await w.drain();
      await sse.until(() => sse.frames.some((f) => f.event === "task"), 20_000);
      expect(sse.frames.find((f) => f.event === "task")!.id).toBeDefined();
    } finally {
      await sse.stop();
      await w.close();
      await r.close();
    }
  }, 60_000);
});

describe("Prefer: wait", () => {
  const quick = (ms: number): Model => ({
    name: "quick",
    async generate() {
      await new Promise((r) => setTimeout(r, ms));
      return { text: "the answer" };
    },
  });

  it("a turn that ends within the wait answers 200 with its output and Preference-Applied", async () => {
    const gh = createGatehouse({ agents: [defineAgent({ name: "slow", instructions: "x", model: quick(50) })] });
    gh.startWorker();
    try {
      const res = await post(gh, "w1", { agent: "slow", input: "go" }, { prefer: "wait=20" });
      expect(res.status).toBe(200);
      expect(res.headers.get("preference-applied")).toBe("wait=20");
      const body = await res.json();
      expect(body).toMatchObject({ agentId: "w1", duplicate: false, status: "done", output: "the answer", error: null });
      expect(body.usage).toMatchObject({ steps: 1 });
      expect(typeof body.turnId).toBe("string");
    } finally {
      await gh.close();
    }
  }, 60_000);

  it("a turn longer than the wait answers 202 as without the header", async () => {
    const gh = createGatehouse({ agents: [defineAgent({ name: "slow", instructions: "x", model: quick(4_000) })] });
    gh.startWorker();
    try {
      const res = await post(gh, "w2", { agent: "slow", input: "go" }, { prefer: "respond-async, wait=1" });
      expect(res.status).toBe(202);
      expect(res.headers.get("preference-applied")).toBe("wait=1");
      expect(await res.json()).toMatchObject({ agentId: "w2", duplicate: false });
    } finally {
      await gh.close();
    }
  }, 60_000);

  it("the wait is cut to maxWaitSeconds; 0 turns it off", async () => {
    const gh = createGatehouse({ agents: [defineAgent({ name: "slow", instructions: "x", model: quick(4_000) })], maxWaitSeconds: 1 });
    const off = createGatehouse({ agents: [defineAgent({ name: "slow", instructions: "x", model: quick(10) })], maxWaitSeconds: 0 });
    gh.startWorker();
    off.startWorker();
    try {
      const res = await post(gh, "w3", { agent: "slow", input: "go" }, { prefer: "wait=600" });
      expect(res.status).toBe(202);
      expect(res.headers.get("preference-applied")).toBe("wait=1");
      const res2 = await post(off, "w4", { agent: "slow", input: "go" }, { prefer: "wait=30" });
      expect(res2.status).toBe(202);
      expect(res2.headers.get("preference-applied")).toBeNull();
    } finally {
      await gh.close();
      await off.close();
    }
  }, 60_000);

  it("the cap is configured by maxWaitSeconds or GATEHOUSE_MAX_WAIT_SECONDS and checked", () => {
    expect(configFromEnv({ GATEHOUSE_MAX_WAIT_SECONDS: "5" }).gatehouse.maxWaitSeconds).toBe(5);
    expect(() => configFromEnv({ GATEHOUSE_MAX_WAIT_SECONDS: "3601" })).toThrow(/GATEHOUSE_MAX_WAIT_SECONDS=3601 is out of range/);
    const agents = [defineAgent({ name: "slow", instructions: "x", model: quick(1) })];
    expect(() => createGatehouse({ agents, maxWaitSeconds: -1 })).toThrow(DefinitionError);
    expect(() => createGatehouse({ agents, maxWaitSeconds: 1.5 })).toThrow(/maxWaitSeconds must be an integer from 0 to 3600/);
  });

  it("a malformed preference is ignored (202 at once, no Preference-Applied)", async () => {
    const gh = createGatehouse({ agents: [defineAgent({ name: "slow", instructions: "x", model: quick(10) })] });
    try {
      const res = await post(gh, "w5", { agent: "slow", input: "go" }, { prefer: "wait=soon" });
      expect(res.status).toBe(202);
      expect(res.headers.get("preference-applied")).toBeNull();
    } finally {
      await gh.close();
    }
  }, 60_000);
});

describe("store/live.ts", () => {
  it("the first delta of a call goes out at once, later ones joined per batch, in order, nothing lost", async () => {
    const live = processLive();
    const got: LiveMessage[] = [];
    const off = live.subscribe("a1", (m) => got.push(m));
    const b = new DeltaBatcher(live, "a1", "t1", 3);
    b.push("a");
    expect(got).toEqual([{ type: "delta", turnId: "t1", step: 3, text: "a" }]);
    b.push("b");
    b.push("c");
    expect(got.length).toBe(1);
    await new Promise((r) => setTimeout(r, DELTA_BATCH_MS * 4));
    expect(got[1]).toEqual({ type: "delta", turnId: "t1", step: 3, text: "bc" });
    b.push("d");
    b.flush();
    expect(got.map((m) => (m as { text: string }).text).join("")).toBe("abcd");
    off();
    b.push("e");
    b.flush();
    expect(got.length).toBe(3);
  });

  it("decodeLive takes only the two message shapes; a throwing listener does not stop the others", () => {
    expect(decodeLive('{"type":"grew","lastEventId":7}')).toEqual({ type: "grew", lastEventId: 7 });
    expect(decodeLive('{"type":"grew"}')).toEqual({ type: "grew" });
    expect(decodeLive('{"type":"grew","lastEventId":7,"turnEnded":false}')).toEqual({ type: "grew", lastEventId: 7, turnEnded: false });
    // Only `false` is carried: anything else reads as "may have ended a turn".
    expect(decodeLive('{"type":"grew","lastEventId":7,"turnEnded":true}')).toEqual({ type: "grew", lastEventId: 7 });
    expect(decodeLive('{"type":"grew","lastEventId":7,"endedTurn":"t1"}')).toEqual({ type: "grew", lastEventId: 7, endedTurn: "t1" });
    expect(decodeLive('{"type":"grew","endedTurn":3}')).toEqual({ type: "grew" });
    expect(decodeLive('{"type":"delta","turnId":"t","step":1,"text":"x","extra":1}')).toEqual({ type: "delta", turnId: "t", step: 1, text: "x" });
    for (const bad of ["", "null", "[]", '{"type":"delta","turnId":"t","step":"1","text":"x"}', '{"type":"other"}', "{"]) {
      expect(decodeLive(bad)).toBeNull();
    }
    const live = processLive();
    const got: string[] = [];
    live.subscribe("a", () => {
      throw new Error("boom");
    });
    live.subscribe("a", (m) => got.push(m.type));
    live.publish("a", { type: "grew" });
    live.publish("b", { type: "grew" });
    expect(got).toEqual(["grew"]);
  });
});
