/**
 * The model port. A model takes the conversation and the tool specs and
 * returns text and/or tool calls. Adapters: scriptedModel (deterministic),
 * openaiCompatible (any chat-completions server).
 */
import type { Message } from "../common/message.ts";
import type { ToolSpec } from "../tools/specs.ts";

export interface ModelToolCallRequest {
  id?: string;
  name: string;
  args: unknown;
}

export interface ModelResponse {
  text?: string;
  toolCalls?: ModelToolCallRequest[];
  usage?: { inputTokens: number; outputTokens: number };
  /** Cost of this call in the model's currency unit, when the adapter knows it. */
  cost?: number;
}

export interface ModelRequest {
  agentId: string;
  turnId: string;
  /** 1-based number of this model step within the turn. */
  step: number;
  /** The conversation the model sees: instructions first, tool results included. */
  messages: Message[];
  tools: ToolSpec[];
  signal: AbortSignal;
  /** Called with text as it arrives (streaming adapters); the full text is still returned. */
  onChunk?: (text: string) => void;
}

export interface Model {
  readonly name: string;
  generate(req: ModelRequest): Promise<ModelResponse>;
}
