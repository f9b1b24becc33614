/**
 * The AI SDK's UI message stream protocol (`x-vercel-ai-ui-message-stream:
 * v1`) over one reading of a turn (routes/chat/turn-reading.ts): each
 * `TurnPart` becomes the protocol's chunk. Pure: no store, no clock, no I/O;
 * routes/chat/stream.ts drives it, routes/chat/history.ts folds its chunks
 * into `UIMessage`s.
 *
 * Invariants (beside those of the reading):
 * - The answer opens with `start` (`messageId` = the turn id) and the turn's
 *   `data-gatehouse-turn` part; a tool call is `tool-input-available`, its
 *   approval request `tool-approval-request` (`approvalId` = the tool call
 *   id), its end `tool-output-available`, `tool-output-error` or
 *   `tool-output-denied`; gatehouse's own state is `data-gatehouse-turn`
 *   (replaced in place: one part per turn) and `data-gatehouse-verdict`; the
 *   reading's end is `finish` (`finishReason` `stop`, `error` after an
 *   `error` chunk, `tool-calls` when the turn waits on the outside).
 * - Chunks are plain JSON of the protocol's shapes (`ChatChunk`, checked
 *   against the `ai` package's `UIMessageChunk` by tests/chat/chat-ui-stream.int.test.ts);
 *   the core does not import `ai` at run time.
 */
import { type TurnData, type TurnPart, TurnReading } from "./turn-reading.ts";
import { TurnEncoder } from "./turn-encoder.ts";

export type { Delta, TurnData } from "./turn-reading.ts";

/** The UI message stream chunks gatehouse writes (a subset of the `ai` package's `UIMessageChunk`). */
export type ChatChunk =
  | { type: "start"; messageId: string }
  | { type: "start-step" }
  | { type: "finish-step" }
  | { type: "text-start"; id: string }
  | { type: "text-delta"; id: string; delta: string }
  | { type: "text-end"; id: string }
  | { type: "tool-input-available"; toolCallId: string; toolName: string; input: unknown }
  | { type: "tool-approval-request"; approvalId: string; toolCallId: string }
  | { type: "tool-output-available"; toolCallId: string; output: unknown }
  | { type: "tool-output-error"; toolCallId: string; errorText: string }
  | { type: "tool-output-denied"; toolCallId: string }
  | { type: "data-gatehouse-turn"; id: string; data: TurnData }
  | { type: "data-gatehouse-verdict"; id: string; data: Record<string, unknown> }
  | { type: "error"; errorText: string }
  | { type: "finish"; finishReason: "stop" | "error" | "tool-calls" };

/** One part of the reading as the protocol's chunk. */
export function uiChunk(p: TurnPart): ChatChunk {
  switch (p.type) {
    case "step-start":
      return { type: "start-step" };
    case "step-end":
      return { type: "finish-step" };
    case "tool-call":
      return { type: "tool-input-available", toolCallId: p.toolCallId, toolName: p.toolName, input: p.input };
    case "approval-request":
      return { type: "tool-approval-request", approvalId: p.toolCallId, toolCallId: p.toolCallId };
    case "tool-output":
      return { type: "tool-output-available", toolCallId: p.toolCallId, output: p.output };
    case "tool-error":
      return { type: "tool-output-error", toolCallId: p.toolCallId, errorText: p.errorText };
    case "tool-denied":
      return { type: "tool-output-denied", toolCallId: p.toolCallId };
    case "turn":
      return { type: "data-gatehouse-turn", id: p.data.turnId, data: p.data };
    case "verdict":
      return { type: "data-gatehouse-verdict", id: p.id, data: p.data };
    case "finish":
      return { type: "finish", finishReason: p.reason };
    default:
      return p;
  }
}

/** A reading of one turn, encoded as the UI message stream. */
export class UiStreamMapper extends TurnEncoder<ChatChunk> {
  constructor(agentId: string, turnId: string, liveFromStep = 1) {
    super(new TurnReading(agentId, turnId, liveFromStep));
  }

  start(): ChatChunk[] {
    return [{ type: "start", messageId: this.turnId }, ...this.encode(this.reading.start())];
  }

  protected encode(parts: TurnPart[]): ChatChunk[] {
    return parts.map(uiChunk);
  }
}

/** One chunk as an SSE frame of the protocol (`data: <json>`). */
export function chunkFrame(c: ChatChunk): string {
  return `data: ${JSON.stringify(c)}\n\n`;
}

/** The protocol's last frame. */
export const DONE_FRAME = "data: [DONE]\n\n";

/** The response headers of the protocol (as the `ai` package's `UI_MESSAGE_STREAM_HEADERS`). */
export const UI_STREAM_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  "x-vercel-ai-ui-message-stream": "v1",
  "x-accel-buffering": "no",
};
