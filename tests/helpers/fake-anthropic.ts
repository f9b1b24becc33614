/**
 * Anthropic's Messages API as a local server speaks it, for tests: the
 * replies of tests/helpers/fake-openai.ts's server (which records requests
 * and is scripted the same way) built in Anthropic's wire format, so
 * `@ai-sdk/anthropic` pointed at `baseURL` posts to `<baseURL>/messages` and
 * reads them:
 * - `message()`: a whole `message` body (text and `tool_use` blocks, usage);
 * - `messageStream()`: the streaming events `message_start`,
 *   `content_block_start` / `content_block_delta` (`text_delta`,
 *   `input_json_delta`) / `content_block_stop` per block, `ping`,
 *   `message_delta` (stop reason, output tokens), `message_stop`;
 * - `anthropicError()`: `{ type: "error", error: { type, message } }` with a
 *   status (429 `rate_limit_error`, 400 `invalid_request_error`, 529
 *   `overloaded_error`, …).
 */
import type { FakeReply } from "./fake-openai.ts";

export { type FakeOpenAI as FakeAnthropic, startFakeOpenAI as startFakeAnthropic } from "./fake-openai.ts";

export type Block =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

const MODEL = "claude-test-1";

export function message(blocks: Block[], usage = { input: 10, output: 5 }): FakeReply {
  return {
    kind: "json",
    body: {
      id: "msg_test",
      type: "message",
      role: "assistant",
      model: MODEL,
      content: blocks,
      stop_reason: blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
      stop_sequence: null,
      usage: { input_tokens: usage.input, output_tokens: usage.output },
    },
  };
}

/**
 * A streamed message: text blocks are sent in the pieces given (`text` as an
 * array), tool inputs as JSON text cut in two `input_json_delta`s.
 */
export function messageStream(
  blocks: Array<{ type: "text"; text: string[] } | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }>,
  usage = { input: 10, output: 5 },
  opts: { stop?: boolean } = {},
): FakeReply {
  const events: Array<{ event: string; data: unknown }> = [];
  const ev = (event: string, data: Record<string, unknown>) => events.push({ event, data: { type: event, ...data } });
  ev("message_start", {
    message: {
      id: "msg_test",
      type: "message",
      role: "assistant",
      model: MODEL,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: usage.input, output_tokens: 1 },
    },
  });
  blocks.forEach((b, index) => {
    if (b.type === "text") {
      ev("content_block_start", { index, content_block: { type: "text", text: "" } });
      if (index === 0) ev("ping", {});
      for (const piece of b.text) ev("content_block_delta", { index, delta: { type: "text_delta", text: piece } });
    } else {
      ev("content_block_start", { index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } });
      const json = JSON.stringify(b.input);
      const half = Math.floor(json.length / 2);
      ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: json.slice(0, half) } });
      ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: json.slice(half) } });
    }
    ev("content_block_stop", { index });
  });
  if (opts.stop !== false) {
    const stop = blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn";
    ev("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: usage.output } });
    ev("message_stop", {});
  }
  return { kind: "sse", events };
}

export function anthropicError(status: number, type: string, message: string, headers?: Record<string, string>): FakeReply {
  return { kind: "json", status, body: { type: "error", error: { type, message } }, headers };
}
