/**
 * The chat page: `useChat` from `@ai-sdk/react` talking to a gatehouse agent
 * through `DefaultChatTransport` (docs/chat-ui.md). Written with
 * `createElement` (as `h`) so it builds and typechecks without a JSX setup;
 * the same `useChat` wiring in JSX is in docs/chat-ui.md.
 *
 * - The chat id (= the agent id) is kept in the URL (`?chat=…`): a reload
 *   opens the same conversation.
 * - History: `GET /v1/chat/:id/messages` before the first render, given to
 *   `useChat({ messages })`.
 * - Resume: `resume: true` calls `GET /v1/chat/:id/stream` on mount; a turn
 *   still running (or restarted on another server) is answered from its
 *   start and followed live.
 * - Approvals: a tool part in state `approval-requested` shows Approve / Deny;
 *   `addToolApprovalResponse` answers it and `sendAutomaticallyWhen`
 *   sends the answer, and the turn streams on.
 * - Only the last message is sent: the conversation is kept by the server.
 *
 * Hooks for tests: `data-role` / `data-message-id` on messages,
 * `data-tool-call-id` / `data-state` on tool parts, `data-turn-status`,
 * `data-testid="status"`, `"input"`, `"send"`, `"approve"`, `"deny"`.
 */
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from "ai";
import { createElement as h, type ReactNode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";

/** Where gatehouse answers (same origin here) and which definition the agent runs. */
const API = location.origin;
const AGENT = "assistant";

/** The chat id from `?chat=`, or a new one written into the URL. */
function chatIdFromUrl(): string {
  const url = new URL(location.href);
  let id = url.searchParams.get("chat");
  if (!id) {
    id = `chat-${crypto.randomUUID().slice(0, 8)}`;
    url.searchParams.set("chat", id);
    history.replaceState(null, "", url);
  }
  return id;
}

type Part = UIMessage["parts"][number];
type ToolPart = Extract<Part, { toolCallId: string }>;
type Decide = (approvalId: string, approved: boolean) => void;

const json = (v: unknown) => h("code", null, JSON.stringify(v));

function ToolCall({ part, decide }: { part: ToolPart; decide: Decide }) {
  const name = part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length);
  const rows: ReactNode[] = [h("div", { key: "in" }, h("b", null, name), " ", json(part.input))];
  if (part.state === "approval-requested") {
    rows.push(h("div", { key: "ask" },
      h("button", { "data-testid": "approve", onClick: () => decide(part.approval.id, true) }, "Approve"),
      h("button", { "data-testid": "deny", onClick: () => decide(part.approval.id, false) }, "Deny")));
  }
  if (part.state === "output-available") rows.push(h("div", { key: "out" }, "→ ", json(part.output)));
  if (part.state === "output-error") rows.push(h("div", { key: "err", className: "error" }, "✗ ", part.errorText));
  if (part.state === "output-denied") rows.push(h("div", { key: "no" }, "denied"));
  return h("div", { className: "tool", "data-tool-call-id": part.toolCallId, "data-state": part.state }, ...rows);
}

function PartView({ part, decide }: { part: Part; decide: Decide }) {
  if (part.type === "text") return h("p", null, part.text);
  if ("toolCallId" in part) return h(ToolCall, { part, decide });
  if (part.type === "data-gatehouse-turn") {
    const status = (part.data as { status: string }).status;
    return h("div", { className: "turn", "data-turn-status": status }, `turn ${status}`);
  }
  return null;
}

function Chat({ id, initial }: { id: string; initial: UIMessage[] }) {
  const [input, setInput] = useState("");
  const chat = useChat({
    id,
    messages: initial,
    resume: true,
    transport: new DefaultChatTransport({
      api: `${API}/v1/chat`,
      body: { agent: AGENT },
      // The server keeps the conversation: send only the new message (or the answered approvals).
      prepareSendMessagesRequest: ({ id, messages, body, trigger, messageId }) => ({
        body: { ...body, id, trigger, messageId, messages: messages.slice(-1) },
      }),
    }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const decide: Decide = (approvalId, approved) =>
    void chat.addToolApprovalResponse({ id: approvalId, approved, ...(approved ? {} : { reason: "denied on the page" }) });
  const send = (e: { preventDefault(): void }) => {
    e.preventDefault();
    if (input.trim() === "") return;
    void chat.sendMessage({ text: input });
    setInput("");
  };
  return h("div", null,
    ...chat.messages.map((m) =>
      h("div", { key: m.id, className: "msg", "data-role": m.role, "data-message-id": m.id },
        ...m.parts.map((part, i) => h(PartView, { key: i, part, decide })))),
    chat.error ? h("p", { className: "error" }, `${chat.error.message} (reload to resume)`) : null,
    h("form", { onSubmit: send },
      h("input", { "data-testid": "input", value: input, placeholder: "Ask something, or: refund 40", onChange: (e: { target: { value: string } }) => setInput(e.target.value) }),
      h("button", { "data-testid": "send", type: "submit" }, "Send")),
    h("p", { className: "hint", "data-testid": "status", "data-status": chat.status }, `chat ${id} · ${chat.status}`));
}

function App() {
  const [id] = useState(chatIdFromUrl);
  const [initial, setInitial] = useState<UIMessage[] | null>(null);
  useEffect(() => {
    fetch(`${API}/v1/chat/${encodeURIComponent(id)}/messages`)
      .then((r) => (r.ok ? (r.json() as Promise<UIMessage[]>) : []))
      .then(setInitial, () => setInitial([]));
  }, [id]);
  return initial === null ? h("p", { className: "hint" }, "Loading…") : h(Chat, { id, initial });
}

createRoot(document.getElementById("root")!).render(h(App, {}));
