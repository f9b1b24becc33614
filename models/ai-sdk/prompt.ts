/**
 * The model port's request -> the AI SDK's call options (language model
 * specification v3; v2 reads the same shapes).
 *
 * Invariants:
 * - Every gatehouse tool goes as a function tool with its JSON Schema as is;
 *   `toolChoice` is `auto` when there are tools, absent otherwise.
 * - The conversation's leading system messages stay `system`; a system
 *   message after the first user or assistant message (a reminder, a note
 *   about a verified candidate) goes as a `user` text message, because some
 *   providers refuse system messages in the middle (Anthropic's converter
 *   throws on them).
 * - A tool call is sent back with an object `input`: arguments that are not a
 *   JSON object (unparsable text the model wrote, passed on as a string) go
 *   as `{}`, since some providers refuse a conversation whose tool input is
 *   not an object (Anthropic answers 400), which would fail every later
 *   step. The tool message after it carries the `invalid_arguments` error.
 * - A tool result goes as `tool-result` with `output: { type: "text" }` and
 *   the tool name of the call it answers (looked up in the assistant
 *   messages before it). A tool message without a `toolCallId` cannot be
 *   sent: `PromptError`, a non-retryable model error.
 * - An assistant message with neither text nor tool calls is left out (some
 *   providers refuse an empty assistant turn); `name` is not sent (the
 *   specification has no field for it).
 */
import type { LanguageModelV3CallOptions, LanguageModelV3FunctionTool, LanguageModelV3Message } from "@ai-sdk/provider";
import type { Message } from "../../common/message.ts";
import type { ToolSpec } from "../../tools/specs.ts";
import { PromptError } from "../../errors/errors.ts";

/** Thrown for a conversation that cannot be sent (the caller makes it a non-retryable ModelError). */
export { PromptError } from "../../errors/errors.ts";

export function toolsOf(specs: ToolSpec[]): LanguageModelV3FunctionTool[] {
  return specs.map((t) => ({
    type: "function",
    name: t.function.name,
    description: t.function.description,
    inputSchema: t.function.parameters as LanguageModelV3FunctionTool["inputSchema"],
  }));
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

export function promptOf(messages: Message[]): LanguageModelV3CallOptions["prompt"] {
  const out: LanguageModelV3Message[] = [];
  const toolNames = new Map<string, string>();
  let leading = true;
  for (const m of messages) {
    switch (m.role) {
      case "system":
        out.push(leading ? { role: "system", content: m.content } : { role: "user", content: [{ type: "text", text: m.content }] });
        break;
      case "user":
        leading = false;
        out.push({ role: "user", content: [{ type: "text", text: m.content }] });
        break;
      case "assistant": {
        leading = false;
        const content: Extract<LanguageModelV3Message, { role: "assistant" }>["content"] = [];
        if (m.content !== "") content.push({ type: "text", text: m.content });
        for (const c of m.toolCalls ?? []) {
          toolNames.set(c.id, c.name);
          content.push({ type: "tool-call", toolCallId: c.id, toolName: c.name, input: isObject(c.args) ? c.args : {} });
        }
        if (content.length > 0) out.push({ role: "assistant", content });
        break;
      }
      case "tool": {
        leading = false;
        if (typeof m.toolCallId !== "string" || m.toolCallId === "") {
          throw new PromptError("a tool message has no toolCallId; the conversation cannot be sent");
        }
        // Providers match results by id; the name is only read by some (a result whose call is not shown gets "unknown").
        const toolName = toolNames.get(m.toolCallId) ?? "unknown";
        out.push({
          role: "tool",
          content: [{ type: "tool-result", toolCallId: m.toolCallId, toolName, output: { type: "text", value: m.content } }],
        });
        break;
      }
      default:
        throw new PromptError(`unknown message role ${JSON.stringify((m as Message).role)}`);
    }
  }
  return out;
}
