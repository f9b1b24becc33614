/**
 * `POST /v1/ag-ui`: the AG-UI protocol (1.0) served by gatehouse, so an
 * AG-UI client (`@ag-ui/client`'s `HttpAgent({ url: "<base>/v1/ag-ui" })`)
 * runs a durable agent (docs/http.md, "AG-UI").
 *
 * The body is a `RunAgentInput` (checked by `@ag-ui/core`'s
 * `RunAgentInputSchema` too): `threadId` = the agent id, the definition in
 * `forwardedProps.agent`. Either
 * - no `resume`: the last message is the user's; its text becomes the
 *   agent's next task, as `POST /v1/chat` does (routes/chat/turn-open.ts,
 *   idempotency key `chat:<message id>`); the client's history is never fed
 *   to the model, the conversation stays server-side; or
 * - `resume` entries answer the interrupts the previous run ended with
 *   (one per call waiting for approval, routes/chat/ag-ui-stream.ts):
 *   `status: "resolved"` with `payload: { approved, reason? }`, or
 *   `status: "cancelled"` (a rejection); each decides that call's approval
 *   of the agent's running turn as `POST …/approvals` does (verb `approve`
 *   too). The messages are then not read.
 * The answer is one AG-UI run over SSE (routes/chat/ag-ui-stream.ts).
 *
 * Bad input is 400 (problem+json) before anything is read or written: the
 * schema, a last message that is not the user's or holds no text, a resume
 * entry whose payload is not `{ approved, reason? }`.
 */
import { z } from "@hono/zod-openapi";
import { contentToText } from "@ag-ui/core";
import { RunAgentInputSchema } from "@ag-ui/core/schemas";
import type { By } from "../../common/by.ts";
import { assertAgentAccess, callerName, tokenHasVerb } from "../auth.ts";
import { BODY_PROBLEMS, defineRoute, jsonBody, routeApp } from "../define.ts";
import { ProblemError } from "../problem.ts";
import type { RouteRuntime } from "../runtime.ts";
import { AgentId, ConcurrencyKeyField, PriorityField } from "../schemas.ts";
import { AG_UI_HEADERS, AgUiMapper, type AgUiEvent, agUiFrame } from "./ag-ui-stream.ts";
import { turnStream } from "./stream.ts";
import { type ApprovalAnswer, type OpenedTurn, openDecisions, openTask } from "./turn-open.ts";

const Resume = z.looseObject({
  interruptId: z.string().min(1).max(256).describe("The interrupt answered: the tool call's id"),
  status: z.enum(["resolved", "cancelled"]).describe("`cancelled` rejects the call"),
  payload: z.unknown().optional().describe("For `resolved`: `{ approved: boolean, reason?: string }`"),
});

export const AgUiRunInput = z.looseObject({
  threadId: AgentId.describe("The agent id"),
  runId: z.string().min(1).max(256).describe("The run's id, echoed in `RUN_STARTED` and `RUN_FINISHED`"),
  messages: z.array(z.looseObject({ id: z.string().max(250), role: z.string().max(32) })).max(10_000)
    .describe("Only the last message is read (the user's; its id is the task's idempotency key `chat:<id>`)"),
  forwardedProps: z.looseObject({
    agent: z.string().min(1).max(256).describe("The agent definition's name"),
    concurrencyKey: ConcurrencyKeyField("The task's concurrency key (as `POST …/tasks` takes it)"),
    priority: PriorityField("The task's priority in seconds, 0-86400 (as `POST …/tasks` takes it)"),
  }),
  resume: z.array(Resume).max(100).optional().describe("Answers to the approval interrupts of the previous run"),
}).openapi("AgUiRunInput");

const Payload = z.strictObject({ approved: z.boolean(), reason: z.string().max(2_000).optional() });

const runAgUi = defineRoute({
  method: "post",
  path: "/v1/ag-ui",
  operationId: "agUiRun",
  summary: "Run an agent with the AG-UI protocol: a user message (or answers to approval interrupts); the answer is AG-UI events",
  description: "A `RunAgentInput`. Verb `enqueue` over the agent `threadId`, and `approve` to answer interrupts.",
  tags: ["chat"],
  request: { body: jsonBody(AgUiRunInput) },
  responses: {
    200: {
      description: "One AG-UI run over SSE: `data: <event JSON>` frames from `RUN_STARTED` to `RUN_FINISHED` or `RUN_ERROR`",
      content: { "text/event-stream": { schema: z.string().openapi({ description: "AG-UI events (protocol 1.0)" }) } },
    },
  },
}, [
  ...BODY_PROBLEMS, "unknown_agent_definition", "agent_definition_conflict", "agent_not_found", "unknown_tool_call",
  "not_awaiting_approval", "approval_conflict", "turn_finished",
], "enqueue");

type Input = z.infer<typeof AgUiRunInput>;

const bad = (detail: string) => new ProblemError("validation_failed", detail);

/** The whole input against the protocol's own schema. */
function checkProtocol(body: Input): void {
  const r = RunAgentInputSchema.safeParse(body);
  if (r.success) return;
  const issue = r.error.issues[0];
  throw bad(`Not a RunAgentInput: ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
}

/** The last message's text: the user's. */
function userText(body: Input): { text: string; messageId: string } {
  const last = body.messages[body.messages.length - 1] as { id: string; role: string; content?: unknown } | undefined;
  if (!last || last.role !== "user") throw bad("Without resume entries the last message must be the user's");
  const text = contentToText(last.content as Parameters<typeof contentToText>[0]);
  if (text.trim() === "") throw bad("The last message holds no text");
  return { text, messageId: last.id };
}

/** The resume entries as approval answers. */
function answers(body: Input): ApprovalAnswer[] {
  return (body.resume ?? []).map((r) => {
    if (r.status === "cancelled") return { toolCallId: r.interruptId, approved: false, reason: "cancelled" };
    const p = Payload.safeParse(r.payload);
    if (!p.success) throw bad(`The resume entry for ${JSON.stringify(r.interruptId)} needs payload { approved: boolean, reason?: string }`);
    return { toolCallId: r.interruptId, approved: p.data.approved, ...(p.data.reason !== undefined ? { reason: p.data.reason } : {}) };
  });
}

/** Answers to interrupts: they decide the running turn's approvals. */
async function resumeRun(rt: RouteRuntime, body: Input, req: Request, by: By): Promise<OpenedTurn> {
  const decided = answers(body);
  const head = await rt.store.getAgent(body.threadId);
  if (!head) throw new ProblemError("agent_not_found", `No agent "${body.threadId}"`);
  if (head.activeTurnId === null) throw new ProblemError("turn_finished", "No turn of this agent runs: nothing waits for these answers");
  return openDecisions(rt, body.threadId, head.activeTurnId, decided, req, by);
}

function answer(rt: RouteRuntime, body: Input, opened: OpenedTurn, req: Request): Response {
  const agentId = body.threadId;
  const mapper = new AgUiMapper(agentId, opened.turnId, body.runId);
  mapper.seedOpen(opened.open);
  const { listener, after, catchUp } = opened;
  const stream = turnStream<AgUiEvent>({
    rt, agentId, mapper, listener, after, signal: req.signal, frame: agUiFrame, last: "", ...(catchUp ? { catchUp } : {}),
  });
  return new Response(stream, { headers: AG_UI_HEADERS });
}

export function agUiRoutes(rt: RouteRuntime) {
  return routeApp(rt).openapi(runAgUi, async (c) => {
    const body = c.req.valid("json");
    assertAgentAccess(c, body.threadId);
    checkProtocol(body);
    const agent = body.forwardedProps.agent;
    if (!rt.agents.get(agent)) throw new ProblemError("unknown_agent_definition", `No agent definition is named ${JSON.stringify(agent)}`);
    if ((body.resume ?? []).length > 0) {
      if (rt.auth !== undefined && !tokenHasVerb(c, "approve")) throw new ProblemError("forbidden", "Answering an interrupt needs the verb approve");
      return answer(rt, body, await resumeRun(rt, body, c.req.raw, callerName(c)), c.req.raw) as never;
    }
    const { text, messageId } = userText(body);
    const { concurrencyKey, priority } = body.forwardedProps;
    const opened = await openTask(rt, { agentId: body.threadId, agent, text, messageId, concurrencyKey, priority, by: callerName(c) }, c.req.raw);
    return answer(rt, body, opened, c.req.raw) as never;
  });
}
