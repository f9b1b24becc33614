/**
 * AG-UI events (protocol 1.0, `@ag-ui/core`) over one reading of a turn
 * (routes/chat/turn-reading.ts), the same reading the UI message stream
 * encodes. Pure: no store, no clock, no I/O; routes/chat/stream.ts drives it.
 *
 * One run of the protocol is one answer: `RUN_STARTED` (`threadId` = the
 * agent id, `runId` = the request's), then per part:
 * - text: `TEXT_MESSAGE_START` (role `assistant`, `messageId` = the text
 *   part's id), `TEXT_MESSAGE_CONTENT` per delta (never empty),
 *   `TEXT_MESSAGE_END`;
 * - a tool call: `TOOL_CALL_START`, one `TOOL_CALL_ARGS` (the arguments as
 *   JSON), `TOOL_CALL_END`; its end `TOOL_CALL_RESULT` (`messageId` =
 *   `<toolCallId>:result`, `content` the output as JSON, or
 *   `{"error":"<type>: <message>"}`, or `{"denied":true}` for a rejected
 *   approval: the call never ran);
 * - gatehouse's own state: `STATE_SNAPSHOT` with `{ agentId, turnId,
 *   status }` (running, waiting, done, failed) at the start and at the end;
 *   a verdict is `CUSTOM` named `gatehouse-verdict`;
 * - the end: `RUN_FINISHED` with outcome `success` when the turn is done;
 *   `RUN_ERROR` (`code` `turn_failed`) when it failed; when it waits for the
 *   outside, `RUN_FINISHED` with outcome `interrupt`, one interrupt per call
 *   waiting for approval (`id` = `toolCallId` = the call's id, `reason`
 *   `tool_approval`, `responseSchema` `{ approved, reason? }`, `metadata.turnId`),
 *   or, when only external results are awaited, outcome `success` with
 *   `pendingToolCallIds`. A resume entry answering an interrupt
 *   (routes/chat/ag-ui.ts) decides the approval.
 * Every text message and tool call is ended before the run's last event.
 */
import { type Event as AgUiEvent, EventType, type Interrupt, PROTOCOL_VERSION } from "@ag-ui/core";
import type { TurnMapper } from "./stream.ts";
import { type FinishReason, type TurnPart, TurnReading, type WaitingCall } from "./turn-reading.ts";
import { TurnEncoder } from "./turn-encoder.ts";

export type { AgUiEvent };

/** The answer an approval interrupt expects (`ResumeEntry.payload`). */
export const APPROVAL_RESPONSE_SCHEMA = {
  type: "object",
  properties: { approved: { type: "boolean" }, reason: { type: "string", maxLength: 2000 } },
  required: ["approved"],
} as const;

/** One event as an SSE frame (what `@ag-ui/encoder`'s `EventEncoder.encodeSSE` writes). */
export function agUiFrame(e: AgUiEvent): string {
  return `data: ${JSON.stringify(e)}\n\n`;
}

/** The response headers of an AG-UI answer. */
export const AG_UI_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache, no-transform",
  "x-accel-buffering": "no",
};

/** A reading of one turn, encoded as one AG-UI run. */
export class AgUiMapper extends TurnEncoder<AgUiEvent> implements TurnMapper<AgUiEvent> {
  readonly runId: string;
  #error = "";

  constructor(agentId: string, turnId: string, runId: string) {
    super(new TurnReading(agentId, turnId));
    this.runId = runId;
  }

  start(): AgUiEvent[] {
    const opened: AgUiEvent = { type: EventType.RUN_STARTED, threadId: this.reading.agentId, runId: this.runId, protocolVersion: PROTOCOL_VERSION };
    return [opened, ...this.encode(this.reading.start())];
  }

  protected encode(parts: TurnPart[]): AgUiEvent[] {
    return parts.flatMap((p) => this.#part(p));
  }

  #part(p: TurnPart): AgUiEvent[] {
    switch (p.type) {
      case "text-start":
        return [{ type: EventType.TEXT_MESSAGE_START, messageId: p.id, role: "assistant" }];
      case "text-delta":
        return [{ type: EventType.TEXT_MESSAGE_CONTENT, messageId: p.id, delta: p.delta }];
      case "text-end":
        return [{ type: EventType.TEXT_MESSAGE_END, messageId: p.id }];
      case "tool-call":
        return [
          { type: EventType.TOOL_CALL_START, toolCallId: p.toolCallId, toolCallName: p.toolName },
          { type: EventType.TOOL_CALL_ARGS, toolCallId: p.toolCallId, delta: JSON.stringify(p.input ?? {}) },
          { type: EventType.TOOL_CALL_END, toolCallId: p.toolCallId },
        ];
      case "tool-output":
        return [this.#result(p.toolCallId, JSON.stringify(p.output ?? null))];
      case "tool-error":
        return [this.#result(p.toolCallId, JSON.stringify({ error: p.errorText }))];
      case "tool-denied":
        return [this.#result(p.toolCallId, JSON.stringify({ denied: true }))];
      case "turn":
        return [{ type: EventType.STATE_SNAPSHOT, snapshot: { ...p.data } }];
      case "verdict":
        return [{ type: EventType.CUSTOM, name: "gatehouse-verdict", value: p.data }];
      case "error":
        this.#error = p.errorText;
        return [];
      case "finish":
        return [this.#end(p.reason, p.waiting)];
      default:
        return [];
    }
  }

  #result(toolCallId: string, content: string): AgUiEvent {
    return { type: EventType.TOOL_CALL_RESULT, messageId: `${toolCallId}:result`, toolCallId, content, role: "tool" };
  }

  #end(reason: FinishReason, waiting: WaitingCall[]): AgUiEvent {
    const run = { threadId: this.reading.agentId, runId: this.runId };
    if (reason === "error") return { type: EventType.RUN_ERROR, message: this.#error || "failed", code: "turn_failed" };
    const approvals = waiting.filter((w) => w.waits === "approval");
    if (approvals.length > 0) {
      const interrupts: Interrupt[] = approvals.map((w) => ({
        id: w.toolCallId,
        reason: "tool_approval",
        toolCallId: w.toolCallId,
        message: "This tool call needs approval",
        responseSchema: { ...APPROVAL_RESPONSE_SCHEMA },
        metadata: { turnId: this.reading.turnId },
      }));
      return { type: EventType.RUN_FINISHED, ...run, outcome: { type: "interrupt", interrupts } };
    }
    const pending = waiting.map((w) => w.toolCallId);
    return { type: EventType.RUN_FINISHED, ...run, outcome: { type: "success", ...(pending.length > 0 ? { pendingToolCallIds: pending } : {}) } };
  }
}
