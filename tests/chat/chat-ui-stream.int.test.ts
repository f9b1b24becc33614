/**
 * The AI SDK's UI message stream served by gatehouse (routes/chat/, docs/http.md
 * "Chat (AI SDK UI message stream)"), read by the AI SDK's own client code:
 * `DefaultChatTransport` (sendMessages, reconnectToStream) and
 * `readUIMessageStream`, in process (`gh.fetch`) and over a real socket, on
 * the memory store and on a redis-server started here (a reader instance with
 * no worker answers the resumed stream). Live text arrives while the model
 * works (the model waits on a promise the test releases only after the reader
 * saw text), a tool call, an approval approved and one denied (the denied
 * tool never runs), resume mid-answer ends with the whole answer, 204 after
 * the turn, bad input is 400 and enqueues nothing, a scoped token reaches only
 * its tenant.
 */
import { serve } from "@hono/node-server";
import { hc } from "hono/client";
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import { createGatehouse, type Gatehouse, type GatehouseApp, memoryStore, type Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import type { ChatChunk } from "../../routes/chat/ui-stream.ts";
import { CHAT_NO_APPROVE, CHAT_SCOPED, CHAT_TOKEN, chatWorld, type Gate, gate } from "../helpers/chat-world.ts";
import { useRedisServer } from "../helpers/redis.ts";

// The chunks gatehouse writes are chunks of the AI SDK's protocol (checked by tsc).
type Assert<T extends true> = T;
export type ChunksFit = Assert<ChatChunk extends UIMessageChunk ? true : false>;

const redis = useRedisServer();

const TOKEN = CHAT_TOKEN;
const SCOPED = CHAT_SCOPED;
const NO_APPROVE = CHAT_NO_APPROVE;

interface Rig {
  name: string;
  worker: Gatehouse;
  reader: Gatehouse;
  workerUrl: string;
  readerUrl: string;
  fetchOf: (g: "worker" | "reader") => typeof fetch;
  paid: number[];
  gates: Gate[];
  close: () => Promise<void>;
}

async function rig(name: string, open: () => Store, shared: boolean, socket: boolean): Promise<Rig> {
  const w = chatWorld();
  type Verb = "read" | "enqueue" | "approve";
  const auth = {
    tokens: [
      TOKEN,
      { token: SCOPED, tenants: ["a-"], verbs: ["read", "enqueue", "approve"] as Verb[] },
      { token: NO_APPROVE, tenants: ["a-"], verbs: ["read", "enqueue"] as Verb[] },
    ],
  };
  const worker = createGatehouse({ agents: [w.agent], store: open(), auth, sse: { pollMs: 20 } });
  worker.startWorker();
  const reader = shared ? createGatehouse({ agents: [w.agent], store: open(), auth, sse: { pollMs: 20 } }) : worker;
  const servers: Array<ReturnType<typeof serve>> = [];
  const listen = (g: Gatehouse) =>
    new Promise<string>((resolve) => {
      const s = serve({ fetch: g.fetch, port: 0, hostname: "127.0.0.1" }, (info) => resolve(`http://127.0.0.1:${info.port}`));
      servers.push(s);
    });
  const workerUrl = socket ? await listen(worker) : "http://gh.test";
  const readerUrl = socket ? (shared ? await listen(reader) : workerUrl) : "http://gh.test";
  const fetchOf = (g: "worker" | "reader") =>
    (socket ? fetch : ((input: RequestInfo | URL, init?: RequestInit) => (g === "worker" ? worker : reader).fetch(new Request(input, init)))) as typeof fetch;
  return {
    name, worker, reader, workerUrl, readerUrl, fetchOf, paid: w.paid, gates: w.gates,
    async close() {
      for (const s of servers) s.close();
      await worker.close();
      if (shared) await reader.close();
    },
  };
}

function transport(r: Rig, g: "worker" | "reader" = "worker", token = TOKEN) {
  return new DefaultChatTransport<UIMessage>({
    api: `${g === "worker" ? r.workerUrl : r.readerUrl}/v1/chat`,
    headers: { authorization: `Bearer ${token}` },
    body: { agent: "assistant" },
    fetch: r.fetchOf(g),
  });
}

const userMsg = (id: string, text: string): UIMessage => ({ id, role: "user", parts: [{ type: "text", text }] });

/** Reads a chunk stream into UIMessage states; `onState` sees each. */
async function readAll(stream: ReadableStream<UIMessageChunk>, onState?: (m: UIMessage) => void, message?: UIMessage) {
  let last: UIMessage | undefined;
  const chunks: UIMessageChunk[] = [];
  const tee = stream.pipeThrough(new TransformStream<UIMessageChunk, UIMessageChunk>({
    transform(c, ctl) {
      chunks.push(c);
      ctl.enqueue(c);
    },
  }));
  for await (const m of readUIMessageStream({ stream: tee, ...(message ? { message } : {}) })) {
    last = m;
    onState?.(m);
  }
  return { message: last!, chunks };
}

const textOf = (m: UIMessage) => m.parts.filter((p) => p.type === "text").map((p) => (p as { text: string }).text).join("");
const toolPart = (m: UIMessage, name: string) => m.parts.find((p) => p.type === `tool-${name}`) as Record<string, any> | undefined;

async function send(r: Rig, chatId: string, messages: UIMessage[], token = TOKEN) {
  return transport(r, "worker", token).sendMessages({ chatId, messages, trigger: "submit-message", messageId: undefined, abortSignal: undefined });
}

const rigs: Array<[string, (socket: boolean) => Promise<Rig>]> = [
  ["memory", (socket) => rig("memory", () => memoryStore(), false, socket)],
  ["redis", (socket) => {
    const prefix = `chat${Math.random().toString(36).slice(2, 8)}:`;
    return rig("redis", () => redisStore({ url: redis.url, prefix }), true, socket);
  }],
];

for (const [name, make] of rigs) {
  for (const socket of [false, true]) {
    describe(`chat UI message stream (${name}, ${socket ? "socket" : "in process"})`, () => {
      it("live text arrives while the model works; the stream ends with finish; resume after the turn is 204", async () => {
        const r = await make(socket);
        try {
          const g = gate();
          r.gates.push(g);
          const stream = await send(r, "a-live", [userMsg("m1", "stream please")]);
          let sawLive = false;
          const { message, chunks } = await readAll(stream, (m) => {
            if (!sawLive && textOf(m) === "Hello ") {
              sawLive = true;
              g.open(); // the model finishes only after the reader saw its first words
            }
          });
          expect(sawLive).toBe(true);
          expect(textOf(message)).toBe("Hello world");
          expect(chunks[0]).toMatchObject({ type: "start" });
          expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
          expect(await transport(r, "reader").reconnectToStream({ chatId: "a-live" })).toBeNull();
        } finally {
          await r.close();
        }
      }, 30_000);

      it("a tool call streams as tool-input-available then tool-output-available; history returns the same message", async () => {
        const r = await make(socket);
        try {
          const { message } = await readAll(await send(r, "a-look", [userMsg("m1", "look for x")]));
          expect(toolPart(message, "look")).toMatchObject({ state: "output-available", input: { q: "look for x" }, output: { found: "look for x" } });
          expect(textOf(message)).toBe("seen");
          // The typed client (hc<GatehouseApp>) knows the route and its answer.
          const api = hc<GatehouseApp>(r.readerUrl, { fetch: r.fetchOf("reader"), headers: { authorization: `Bearer ${TOKEN}` } });
          const res = await api.v1.chat[":agentId"].messages.$get({ param: { agentId: "a-look" } });
          expect(res.status).toBe(200);
          const typed = await res.json();
          const history = typed as unknown as UIMessage[];
          expect(typed[1].role).toBe("assistant");
          expect(history.map((m) => m.role)).toEqual(["user", "assistant"]);
          expect(textOf(history[0])).toBe("look for x");
          expect(toolPart(history[1], "look")).toMatchObject({ state: "output-available", output: { found: "look for x" } });
          expect(textOf(history[1])).toBe("seen");
        } finally {
          await r.close();
        }
      }, 30_000);

      it("approval approved from the page runs the tool once; one denied never runs it (tool-output-denied)", async () => {
        const r = await make(socket);
        try {
          for (const [chatId, approved] of [["a-yes", true], ["a-no", false]] as const) {
            const first = await readAll(await send(r, chatId, [userMsg("m1", "pay 7")]));
            const part = toolPart(first.message, "pay")!;
            expect(part).toMatchObject({ state: "approval-requested", input: { amount: 7 } });
            expect(first.chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "tool-calls" });
            expect(r.paid).toEqual(approved ? [] : [7]);
            // What useChat sends after addToolApprovalResponse: the last assistant message, part answered.
            const answered: UIMessage = {
              ...first.message,
              parts: first.message.parts.map((p) => p === (part as unknown)
                ? { ...part, state: "approval-responded", approval: { id: part.approval.id, approved, ...(approved ? {} : { reason: "no" }) } } as never
                : p),
            };
            const next = await readAll(await send(r, chatId, [userMsg("m1", "pay 7"), answered]), undefined, structuredClone(answered));
            const after = toolPart(next.message, "pay")!;
            if (approved) {
              expect(after).toMatchObject({ state: "output-available", output: { paid: 7 } });
              expect(textOf(next.message)).toContain("after pay");
            } else {
              expect(after.state).toBe("output-denied");
              expect(next.chunks.some((c) => c.type === "tool-output-denied")).toBe(true);
            }
            expect(next.chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
          }
          expect(r.paid).toEqual([7]); // the denied call never ran

          // A token without `approve` cannot answer an approval: 403, nothing decided.
          const first = await readAll(await send(r, "a-verb", [userMsg("m1", "pay 9")]));
          const part = toolPart(first.message, "pay")!;
          const answered = { ...first.message, parts: [{ ...part, state: "approval-responded", approval: { id: part.approval.id, approved: true } }] };
          const res = await r.fetchOf("worker")(`${r.workerUrl}/v1/chat`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${NO_APPROVE}` },
            body: JSON.stringify({ id: "a-verb", agent: "assistant", trigger: "submit-message", messages: [answered] }),
          });
          expect(res.status).toBe(403);
          const calls = await r.worker.store.getToolCalls("a-verb", first.message.id);
          expect(calls.map((c) => c.approval?.status)).toEqual(["pending"]);
          expect(r.paid).toEqual([7]);
        } finally {
          await r.close();
        }
      }, 30_000);

      it("resume mid-answer (on Redis from another instance) replays from the start and ends with the whole answer", async () => {
        const r = await make(socket);
        try {
          const g = gate();
          r.gates.push(g);
          const live = await send(r, "a-resume", [userMsg("m1", "stream it")]);
          const reader = live.getReader();
          // Read until the first text arrives, then "reload": drop the stream.
          for (;;) {
            const { value } = await reader.read();
            if (value?.type === "text-delta") break;
          }
          await reader.cancel();
          const resumed = await transport(r, "reader").reconnectToStream({ chatId: "a-resume" });
          expect(resumed).not.toBeNull();
          let opened = false;
          const { message, chunks } = await readAll(resumed!, () => {
            if (!opened) {
              opened = true;
              g.open();
            }
          });
          expect(textOf(message)).toBe("Hello world");
          expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
          expect(await transport(r, "reader").reconnectToStream({ chatId: "a-resume" })).toBeNull();
        } finally {
          await r.close();
        }
      }, 30_000);

      it("bad input is 400 problem+json and enqueues nothing; a scoped token reaches only its tenant", async () => {
        const r = await make(socket);
        try {
          const post = (body: unknown, token = TOKEN) =>
            r.fetchOf("worker")(`${r.workerUrl}/v1/chat`, {
              method: "POST",
              headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
              body: JSON.stringify(body),
            });
          const cases: unknown[] = [
            { id: "a-bad", agent: "assistant", messages: [] },
            { id: "a-bad", agent: "assistant", messages: [{ id: "m", role: "user", parts: [] }] },
            { id: "a bad", agent: "assistant", messages: [{ id: "m", role: "user", parts: [{ type: "text", text: "hi" }] }] },
            { id: "a-bad", agent: "assistant", trigger: "regenerate-message", messages: [{ id: "m", role: "user", parts: [{ type: "text", text: "hi" }] }] },
            { id: "a-bad", agent: "assistant", messages: [{ id: "turn_x", role: "assistant", parts: [{ type: "text", text: "hi" }] }] },
            { id: "a-bad", agent: "assistant", messages: [{ id: "m", role: "user", parts: [{ type: "text", text: "hi" }] }], extra: undefined, trigger: 5 },
          ];
          for (const body of cases) {
            const res = await post(body);
            expect(res.status, JSON.stringify(body)).toBe(400);
            expect(res.headers.get("content-type")).toContain("application/problem+json");
            expect((await res.json()).code).toBe("validation_failed");
          }
          expect(await r.worker.store.getAgent("a-bad")).toBeNull();
          const other = await post({ id: "b-1", agent: "assistant", messages: [{ id: "m", role: "user", parts: [{ type: "text", text: "hi" }] }] }, SCOPED);
          expect(other.status).toBe(403);
          expect(await r.worker.store.getAgent("b-1")).toBeNull();
          const own = await readAll(await send(r, "a-mine", [userMsg("m1", "look here")], SCOPED));
          expect(textOf(own.message)).toBe("seen");
          const read = await r.fetchOf("reader")(`${r.readerUrl}/v1/chat/b-1/messages`, { headers: { authorization: `Bearer ${SCOPED}` } });
          expect(read.status).toBe(403);
        } finally {
          await r.close();
        }
      }, 30_000);
    });
  }
}

describe("chat UI message stream (redis): the server that was streaming restarts", () => {
  it("a new server process on the same store resumes the turn from its start and ends with the whole answer", async () => {
    const prefix = `chatrs${Math.random().toString(36).slice(2, 8)}:`;
    const w = chatWorld();
    const auth = { tokens: [TOKEN] };
    const worker = createGatehouse({ agents: [w.agent], store: redisStore({ url: redis.url, prefix }), auth, sse: { pollMs: 20 } });
    worker.startWorker();
    const g = gate();
    w.gates.push(g);
    const first = createGatehouse({ agents: [w.agent], store: redisStore({ url: redis.url, prefix }), auth, sse: { pollMs: 20 } });
    const viaFirst = (input: RequestInfo | URL, init?: RequestInit) => first.fetch(new Request(input, init));
    try {
      const t1 = new DefaultChatTransport<UIMessage>({ api: "http://gh.test/v1/chat", headers: { authorization: `Bearer ${TOKEN}` }, body: { agent: "assistant" }, fetch: viaFirst as typeof fetch });
      const live = (await t1.sendMessages({ chatId: "r-1", messages: [userMsg("m1", "stream now")], trigger: "submit-message", messageId: undefined, abortSignal: undefined })).getReader();
      for (;;) {
        const { value } = await live.read();
        if (value?.type === "text-delta") break;
      }
      // The streaming server goes away mid-answer (its store connection closed), a new one comes up.
      await first.close();
      await live.cancel().catch(() => {});
      const second = createGatehouse({ agents: [w.agent], store: redisStore({ url: redis.url, prefix }), auth, sse: { pollMs: 20 } });
      try {
        const t2 = new DefaultChatTransport<UIMessage>({
          api: "http://gh.test/v1/chat", headers: { authorization: `Bearer ${TOKEN}` }, body: { agent: "assistant" },
          fetch: ((input: RequestInfo | URL, init?: RequestInit) => second.fetch(new Request(input, init))) as typeof fetch,
        });
        const resumed = await t2.reconnectToStream({ chatId: "r-1" });
        expect(resumed).not.toBeNull();
        let opened = false;
        const { message } = await readAll(resumed!, () => {
          if (!opened) {
            opened = true;
            g.open();
          }
        });
        expect(textOf(message)).toBe("Hello world");
      } finally {
        await second.close();
      }
    } finally {
      g.open();
      await worker.close();
    }
  }, 30_000);
});
