/**
 * The chat routes: the AI SDK's UI message stream protocol served by
 * gatehouse, so `useChat` with `DefaultChatTransport({ api: "<base>/v1/chat",
 * body: { agent } })` talks to a durable agent with no glue (docs/http.md,
 * "Chat (AI SDK UI message stream)").
 *
 * - `POST /v1/chat` (`{ id, agent, messages, trigger, messageId, … }`, `id`
 *   = the agent id): when the last message is the user's, its text becomes
 *   the agent's next task (idempotency key `chat:<message id>`: the same
 *   message sent again enqueues nothing and answers its turn); when it is
 *   the assistant's (the turn's id) holding tool parts in state
 *   `approval-responded`, each decides that call's approval as
 *   `POST …/approvals` does (verb `approve` too). The conversation stays
 *   server-side: only the last message is read, the client's history is
 *   never fed to the model. The answer is the turn's stream from that point.
 * - `GET /v1/chat/:agentId/stream` (`reconnectToStream`): the running (or
 *   queued) turn's answer from its start, followed live to its end; 204 when
 *   no turn runs or waits.
 * - `GET /v1/chat/:agentId/messages`: the conversation as `UIMessage[]`
 *   (routes/chat/history.ts).
 *
 * Bad input is 400 (problem+json) before anything is read or written: the
 * schema, a last user message without text, a `regenerate-message`
 * trigger, an assistant message without an answered approval.
 */
import type { By } from "../../common/by.ts";
import { z } from "@hono/zod-openapi";
import { assertAgentAccess, callerName, tokenHasVerb } from "../auth.ts";
import { BODY_PROBLEMS, defineRoute, json, jsonBody, routeApp } from "../define.ts";
import { ProblemError } from "../problem.ts";
import type { RouteRuntime } from "../runtime.ts";
import { AgentId, AgentParams, ConcurrencyKeyField, PriorityField, TurnId } from "../schemas.ts";
import { chatHistory } from "./history.ts";
import { ChatListener, chatStream } from "./stream.ts";
import { UI_STREAM_HEADERS, UiStreamMapper } from "./ui-stream.ts";
import { turnStart } from "./turn-start.ts";
import { type OpenedTurn, openDecisions, openTask } from "./turn-open.ts";

const Part = z.looseObject({ type: z.string().min(1).max(256) });

const InMessage = z.looseObject({
  id: z.string().max(250).describe("A user message's id is its task's idempotency key (`chat:<id>`, at most 256 characters)"),
  role: z.enum(["system", "user", "assistant"]),
  parts: z.array(Part).max(1_000),
});

export const ChatRequest = z.looseObject({
  id: AgentId.describe("The agent id (the chat's id)"),
  agent: z.string().min(1).max(256).describe("The agent definition's name (a `body` field of the transport)"),
  messages: z.array(InMessage).min(1).max(10_000).describe("Only the last message is read"),
  trigger: z.enum(["submit-message", "regenerate-message"]).optional(),
  messageId: z.string().max(256).optional(),
  concurrencyKey: ConcurrencyKeyField("The task's concurrency key (as `POST …/tasks` takes it; a `body` field of the transport)"),
  priority: PriorityField("The task's priority in seconds, 0-86400 (as `POST …/tasks` takes it)"),
}).openapi("ChatRequest");

export const ChatMessage = z.object({
  id: z.string(),
  role: z.enum(["user", "assistant"]),
  parts: z.array(z.looseObject({ type: z.string() })),
}).openapi("ChatMessage");

const Approved = z.strictObject({ id: z.string().min(1).max(256), approved: z.boolean(), reason: z.string().max(2_000).optional() });

const STREAM = {
  description: "The UI message stream (SSE, `x-vercel-ai-ui-message-stream: v1`): `data: <chunk JSON>` frames, then `data: [DONE]`",
  content: { "text/event-stream": { schema: z.string().openapi({ description: "UI message stream protocol v1" }) } },
};

const postChat = defineRoute({
  method: "post",
  path: "/v1/chat",
  operationId: "chat",
  summary: "Send a chat message (or approval responses) to an agent; the answer is the AI SDK UI message stream",
  description: "What `DefaultChatTransport` sends. Verb `enqueue` over the agent `id`, and `approve` to answer approvals.",
  tags: ["chat"],
  request: { body: jsonBody(ChatRequest) },
  responses: { 200: STREAM },
}, [
  ...BODY_PROBLEMS, "unknown_agent_definition", "agent_definition_conflict", "agent_not_found", "unknown_tool_call",
  "not_awaiting_approval", "approval_conflict", "turn_finished",
], "enqueue");

const resumeChat = defineRoute({
  method: "get",
  path: "/v1/chat/{agentId}/stream",
  operationId: "resumeChatStream",
  summary: "The running turn's answer from its start, followed live to its end (`reconnectToStream`)",
  tags: ["chat"],
  request: { params: AgentParams },
  responses: { 200: STREAM, 204: { description: "No turn runs or waits" } },
}, ["invalid_agent_id", "validation_failed"], "read");

const chatMessages = defineRoute({
  method: "get",
  path: "/v1/chat/{agentId}/messages",
  operationId: "chatMessages",
  summary: "The conversation as AI SDK `UIMessage`s (what `useChat({ messages })` takes)",
  tags: ["chat"],
  request: { params: AgentParams },
  responses: { 200: json("The messages, oldest first", z.array(ChatMessage)) },
}, ["invalid_agent_id", "validation_failed"], "read");

type Body = z.infer<typeof ChatRequest>;
type Msg = z.infer<typeof InMessage>;

const bad = (detail: string) => new ProblemError("validation_failed", detail);

/** The text of the user's message (its text parts joined). */
function userText(m: Msg): string {
  const text = m.parts.filter((p) => p.type === "text" && typeof p.text === "string").map((p) => p.text as string).join("");
  if (text.trim() === "") throw bad("The last message holds no text");
  return text;
}

/** The approvals the assistant's message answers: `approval-responded` tool parts. */
function answeredApprovals(m: Msg): Array<{ toolCallId: string; approved: boolean; reason?: string }> {
  const out: Array<{ toolCallId: string; approved: boolean; reason?: string }> = [];
  for (const p of m.parts) {
    if (!(p.type.startsWith("tool-") || p.type === "dynamic-tool") || p.state !== "approval-responded") continue;
    const a = Approved.safeParse(p.approval);
    if (!a.success || typeof p.toolCallId !== "string" || a.data.id !== p.toolCallId) {
      throw bad(`A tool part in state approval-responded needs toolCallId and approval { id, approved, reason? } with id = its toolCallId`);
    }
    out.push({ toolCallId: p.toolCallId, approved: a.data.approved, ...(a.data.reason !== undefined ? { reason: a.data.reason } : {}) });
  }
  if (out.length === 0) throw bad("The last message is the assistant's but answers no approval");
  return out;
}

function streamResponse(body: ReadableStream<Uint8Array>): Response {
  return new Response(body, { headers: UI_STREAM_HEADERS });
}

/** The turn's answer as the UI message stream, from where `opened` says. */
function answer(rt: RouteRuntime, agentId: string, opened: OpenedTurn, req: Request): Response {
  const mapper = new UiStreamMapper(agentId, opened.turnId);
  mapper.seedOpen(opened.open);
  const { listener, after, catchUp } = opened;
  return streamResponse(chatStream({ rt, agentId, mapper, listener, after, signal: req.signal, ...(catchUp ? { catchUp } : {}) }));
}

/** Approval responses: decide each, then the turn's answer from there on. */
async function continueTurn(rt: RouteRuntime, agentId: string, last: Msg, req: Request, by: By): Promise<Response> {
  const answers = answeredApprovals(last);
  const turnId = TurnId.safeParse(last.id);
  if (!turnId.success) throw bad("The assistant message's id is not a turn id");
  return answer(rt, agentId, await openDecisions(rt, agentId, turnId.data, answers, req, by), req);
}

export function chatRoutes(rt: RouteRuntime) {
  return routeApp(rt)
    .openapi(postChat, async (c) => {
      const body = c.req.valid("json");
      assertAgentAccess(c, body.id);
      if (body.trigger === "regenerate-message") throw bad("trigger regenerate-message is not supported: the conversation is kept by the server");
      const last = body.messages[body.messages.length - 1];
      if (last.role === "user") {
        const opened = await openTask(rt, {
          agentId: body.id, agent: body.agent, text: userText(last), messageId: last.id,
          concurrencyKey: body.concurrencyKey, priority: body.priority, by: callerName(c),
        }, c.req.raw);
        return answer(rt, body.id, opened, c.req.raw) as never;
      }
      if (last.role !== "assistant") throw bad("The last message must be the user's or the assistant's");
      if (rt.auth !== undefined && !tokenHasVerb(c, "approve")) {
        throw new ProblemError("forbidden", "Answering an approval needs the verb approve");
      }
      if (!rt.agents.get(body.agent)) throw new ProblemError("unknown_agent_definition", `No agent definition is named ${JSON.stringify(body.agent)}`);
      return continueTurn(rt, body.id, last, c.req.raw, callerName(c)) as never;
    })
    .openapi(resumeChat, async (c) => {
      const { agentId } = c.req.valid("param");
      const head = await rt.store.getAgent(agentId);
      let turnId = head?.activeTurnId ?? null;
      if (head && turnId === null && head.pendingTasks > 0) turnId = (await rt.store.listQueuedTasks(agentId, 1))[0]?.turnId ?? null;
      if (!head || turnId === null) return c.body(null, 204);
      const listener = new ChatListener(rt.live, agentId);
      try {
        await listener.ready();
        const after = head.activeTurnId === turnId ? await turnStart(rt.store, agentId, turnId) : head.lastEventId;
        const mapper = new UiStreamMapper(agentId, turnId);
        return streamResponse(chatStream({ rt, agentId, mapper, listener, after, signal: c.req.raw.signal, catchUp: true })) as never;
      } catch (err) {
        listener.close();
        throw err;
      }
    })
    .openapi(chatMessages, async (c) => {
      const { agentId } = c.req.valid("param");
      return c.json(await chatHistory(rt.store, agentId), 200);
    });
}
