/**
 * `GET /v1/chat/:id/messages`: the conversation as `UIMessage`s, folded from
 * the same reading of the event log as the live answer
 * (routes/chat/ui-stream.ts): per turn, the user's message (the task's
 * input) and the assistant's (id = the turn id; step starts, text, tool
 * parts with their approvals and outcomes, the `data-gatehouse-turn` part).
 *
 * Bounded: the first MAX_HISTORY_EVENTS retained events of the log are read
 * (pages of the events route's size); a longer log answers the turns those
 * events hold. Events that retention removed are gone from the history too.
 */
import type { Store } from "../../store/port.ts";
import { type ChatChunk, UiStreamMapper } from "./ui-stream.ts";

/** Events one history read goes through, at most. */
export const MAX_HISTORY_EVENTS = 10_000;
const PAGE = 500;

export type ChatPart =
  | { type: "step-start" }
  | { type: "text"; text: string; state: "streaming" | "done" }
  | {
    type: `tool-${string}`;
    toolCallId: string;
    state: "input-available" | "approval-requested" | "output-available" | "output-error" | "output-denied";
    input: unknown;
    output?: unknown;
    errorText?: string;
    approval?: { id: string; approved?: boolean };
  }
  | { type: `data-${string}`; id: string; data: unknown };

export interface ChatMessage {
  id: string;
  role: "user" | "assistant";
  parts: ChatPart[];
}

type ToolPart = Extract<ChatPart, { toolCallId: string }>;

/** Folds answer chunks into an assistant message's parts (what the AI SDK's client does with them). */
export function foldChunks(chunks: readonly ChatChunk[]): ChatPart[] {
  const parts: ChatPart[] = [];
  const texts = new Map<string, Extract<ChatPart, { type: "text" }>>();
  const tools = new Map<string, ToolPart>();
  const data = new Map<string, Extract<ChatPart, { id: string }>>();
  for (const c of chunks) {
    const tool = "toolCallId" in c ? tools.get(c.toolCallId) : undefined;
    switch (c.type) {
      case "start-step":
        parts.push({ type: "step-start" });
        break;
      case "text-start": {
        const p = { type: "text" as const, text: "", state: "streaming" as const };
        texts.set(c.id, p);
        parts.push(p);
        break;
      }
      case "text-delta":
        texts.get(c.id)!.text += c.delta;
        break;
      case "text-end":
        (texts.get(c.id) as { state: string }).state = "done";
        break;
      case "tool-input-available": {
        const p: ToolPart = { type: `tool-${c.toolName}`, toolCallId: c.toolCallId, state: "input-available", input: c.input };
        tools.set(c.toolCallId, p);
        parts.push(p);
        break;
      }
      case "tool-approval-request":
        if (tool) Object.assign(tool, { state: "approval-requested", approval: { id: c.approvalId } });
        break;
      case "tool-output-available":
        if (tool) Object.assign(tool, { state: "output-available", output: c.output }, tool.approval ? { approval: { ...tool.approval, approved: true } } : {});
        break;
      case "tool-output-error":
        if (tool) Object.assign(tool, { state: "output-error", errorText: c.errorText });
        break;
      case "tool-output-denied":
        if (tool) Object.assign(tool, { state: "output-denied", approval: { id: tool.approval?.id ?? c.toolCallId, approved: false } });
        break;
      case "data-gatehouse-turn":
      case "data-gatehouse-verdict": {
        const old = data.get(`${c.type}:${c.id}`);
        if (old) old.data = c.data;
        else {
          const p = { type: c.type, id: c.id, data: c.data };
          data.set(`${c.type}:${c.id}`, p);
          parts.push(p);
        }
        break;
      }
    }
  }
  return parts;
}

/** The conversation of `agentId` as `UIMessage`s ([] for an unknown agent). */
export async function chatHistory(store: Store, agentId: string): Promise<ChatMessage[]> {
  const turns = new Map<string, { mapper: UiStreamMapper; chunks: ChatChunk[] }>();
  let after = 0;
  for (let read = 0; read < MAX_HISTORY_EVENTS;) {
    const events = await store.readEvents(agentId, after, Math.min(PAGE, MAX_HISTORY_EVENTS - read));
    if (events.length === 0) break;
    read += events.length;
    after = events[events.length - 1].id;
    for (const e of events) {
      if (e.turnId === null) continue;
      let t = turns.get(e.turnId);
      if (!t) {
        if (e.type !== "task_enqueued") continue;
        const mapper = new UiStreamMapper(agentId, e.turnId, Infinity);
        t = { mapper, chunks: mapper.start() };
        turns.set(e.turnId, t);
      }
      t.chunks.push(...t.mapper.event(e));
    }
  }
  const out: ChatMessage[] = [];
  for (const [turnId, t] of turns) {
    t.chunks.push(...t.mapper.settle());
    const turn = await store.getTurn(agentId, turnId);
    const input = turn?.input;
    out.push({ id: `user-${turnId}`, role: "user", parts: [{ type: "text", text: typeof input === "string" ? input : JSON.stringify(input ?? null), state: "done" }] });
    out.push({ id: turnId, role: "assistant", parts: foldChunks(t.chunks) });
  }
  return out;
}
