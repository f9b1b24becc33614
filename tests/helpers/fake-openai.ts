/**
 * A local chat-completions server for tests. It answers in the documented
 * OpenAI format (JSON bodies, tool calls, usage, `{ error: { message } }`
 * errors, `data:` server-sent events ending with `[DONE]`), records every
 * request it receives, and is scripted per test: replies queued with
 * `enqueue()` are used first, in order, then the `script` function, if any.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  method: string;
  /** Path and query as received, e.g. `/v1/chat/completions`. */
  path: string;
  headers: IncomingMessage["headers"];
  /** The JSON body (null when the body was not JSON). */
  body: any;
}

export type FakeReply =
  /** A JSON body with a status (default 200). */
  | { kind: "json"; status?: number; body: unknown; headers?: Record<string, string> }
  /** A body sent as given. */
  | { kind: "raw"; status?: number; body: string; headers?: Record<string, string> }
  /** Server-sent events: each chunk becomes one `data:` event (strings are sent as given); `[DONE]` unless `done: false`. */
  | { kind: "stream"; chunks: Array<unknown>; done?: boolean; delayMs?: number; raw?: string }
  /** Server-sent events with event names (Anthropic's format), each `data` JSON-encoded; the stream ends after the last. */
  | { kind: "sse"; events: Array<{ event: string; data: unknown }> }
  /** Never answers (for timeouts). */
  | { kind: "hang" }
  /** Closes the connection without an answer (a network error). */
  | { kind: "destroy" };

export interface FakeOpenAI {
  /** `http://127.0.0.1:<port>/v1` */
  baseURL: string;
  requests: RecordedRequest[];
  enqueue(...replies: FakeReply[]): void;
  /** Answers requests once the queue is empty; `index` counts every request from 0. */
  script: ((req: RecordedRequest, index: number) => FakeReply) | null;
  close(): Promise<void>;
}

export interface FakeToolCall {
  id: string;
  name: string;
  /** The arguments text exactly as the model "wrote" it. */
  arguments: string;
}

/** A chat-completions body. */
export function completion(opts: {
  text?: string | null;
  toolCalls?: FakeToolCall[];
  usage?: { prompt: number; completion: number };
  model?: string;
}): Record<string, unknown> {
  const message: Record<string, unknown> = { role: "assistant", content: opts.text ?? null };
  if (opts.toolCalls?.length) {
    message.tool_calls = opts.toolCalls.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  return {
    id: "chatcmpl-test",
    object: "chat.completion",
    created: 1_700_000_000,
    model: opts.model ?? "test-model",
    choices: [{ index: 0, message, logprobs: null, finish_reason: opts.toolCalls?.length ? "tool_calls" : "stop" }],
    ...(opts.usage
      ? {
        usage: {
          prompt_tokens: opts.usage.prompt,
          completion_tokens: opts.usage.completion,
          total_tokens: opts.usage.prompt + opts.usage.completion,
        },
      }
      : {}),
  };
}

/** One `chat.completion.chunk` with a delta for choice 0. */
export function chunk(delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return {
    id: "chatcmpl-test",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "test-model",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

/** The final usage chunk sent with `stream_options.include_usage` (empty choices). */
export function usageChunk(prompt: number, completionTokens: number): Record<string, unknown> {
  return {
    id: "chatcmpl-test",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "test-model",
    choices: [],
    usage: { prompt_tokens: prompt, completion_tokens: completionTokens, total_tokens: prompt + completionTokens },
  };
}

/** The error body of the API: `{ error: { message, type, code } }`. */
export function apiError(status: number, message: string, headers?: Record<string, string>): FakeReply {
  return { kind: "json", status, body: { error: { message, type: "invalid_request_error", code: null } }, headers };
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const queue: FakeReply[] = [];
  let count = 0;
  const fake: FakeOpenAI = {
    baseURL: "",
    requests: [],
    enqueue: (...replies) => void queue.push(...replies),
    script: null,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const server: Server = createServer((req, res) => {
    const parts: Uint8Array[] = [];
    req.on("data", (c: Uint8Array) => parts.push(c));
    req.on("end", () => {
      const text = new TextDecoder().decode(concat(parts));
      let body: unknown = null;
      try {
        body = JSON.parse(text);
      } catch {
        body = null;
      }
      const recorded: RecordedRequest = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body };
      fake.requests.push(recorded);
      const index = count++;
      const reply = queue.shift() ?? fake.script?.(recorded, index) ??
        apiError(500, `fake server: no reply scripted for request ${index}`);
      void answer(reply, req, res);
    });
  });

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  fake.baseURL = `http://127.0.0.1:${port}/v1`;
  return fake;
}

async function answer(reply: FakeReply, req: IncomingMessage, res: ServerResponse): Promise<void> {
  switch (reply.kind) {
    case "json":
      res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers });
      res.end(JSON.stringify(reply.body));
      return;
    case "raw":
      res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers });
      res.end(reply.body);
      return;
    case "hang":
      return;
    case "sse":
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      for (const e of reply.events) res.write(`event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
      res.end();
      return;
    case "destroy":
      req.socket.destroy();
      return;
    case "stream": {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
      res.write(": keep-alive\n\n");
      for (const c of reply.chunks) {
        if (res.destroyed) return;
        res.write(`data: ${typeof c === "string" ? c : JSON.stringify(c)}\n\n`);
        if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
      }
      if (reply.raw) res.write(reply.raw);
      if (reply.done !== false) res.write("data: [DONE]\n\n");
      res.end();
      return;
    }
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
