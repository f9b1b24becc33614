/**
 * What a chat request does before its answer streams, shared by every chat
 * protocol (routes/chat/routes.ts, routes/chat/ag-ui.ts): a user's message
 * becomes the agent's next task, or a person's answers decide the turn's
 * approvals; either way the listener is subscribed (and ready) before the
 * request acts, and the answer knows where in the log it starts.
 *
 * - `openTask`: the text is the agent's next task, idempotency key
 *   `chat:<message id>`: the same message sent again enqueues nothing and
 *   answers its turn from its start (`catchUp`).
 * - `openDecisions`: each answer decides that call's approval as
 *   `POST …/approvals` does (routes/approvals.ts `decide`: first decision
 *   wins, the same problems); the answer reads on from the log's end, with
 *   the turn's calls still open (`open`) seeded into the reading.
 *
 * On any failure the listener is closed before the error is thrown.
 */
import type { By } from "../../common/by.ts";
import { decide } from "../approvals.ts";
import { logGrew } from "../live-feed.ts";
import { ProblemError } from "../problem.ts";
import { taskLane } from "../task-options.ts";
import type { RouteRuntime } from "../runtime.ts";
import type { EnqueueTaskRequest } from "../../store/port.ts";
import { ChatListener } from "./stream.ts";
import type { Open } from "./turn-reading.ts";
import { turnStart } from "./turn-start.ts";

/** Where the answer starts: read events with id > `after`; `catchUp` for a turn already under way. */
export interface OpenedTurn {
  turnId: string;
  listener: ChatListener;
  after: number;
  catchUp: boolean;
  /** The turn's calls open when the answer starts (a continuation). */
  open: Array<{ toolCallId: string; waits: Open; external: boolean }>;
}

export interface TaskMessage {
  agentId: string;
  /** The agent definition's name. */
  agent: string;
  text: string;
  /** The message's id ("" for none): the task's idempotency key `chat:<id>`. */
  messageId: string;
  /** The request's `concurrencyKey` and `priority` (checked by the route's schema; routes/task-options.ts `taskLane`). */
  concurrencyKey?: string | undefined;
  priority?: number | undefined;
  /** The caller's name (routes/auth.ts `callerName`), given to the definition's `concurrencyKey(task)`. */
  by: string | null;
}

/** A person's answer to one approval of the turn. */
export interface ApprovalAnswer {
  toolCallId: string;
  approved: boolean;
  reason?: string;
}

async function withListener(rt: RouteRuntime, agentId: string, act: (l: ChatListener) => Promise<OpenedTurn>): Promise<OpenedTurn> {
  const listener = new ChatListener(rt.live, agentId);
  try {
    await listener.ready();
    return await act(listener);
  } catch (err) {
    listener.close();
    throw err;
  }
}

/** The message becomes the agent's next task; the answer starts at it (or at its turn's start, sent again). */
export function openTask(rt: RouteRuntime, m: TaskMessage, req: Request): Promise<OpenedTurn> {
  const def = rt.agents.get(m.agent);
  if (!def) throw new ProblemError("unknown_agent_definition", `No agent definition is named ${JSON.stringify(m.agent)}`);
  const agentId = m.agentId;
  // Before the listener: an invalid derived key changes nothing.
  const lane = taskLane(m.by, def, m, { agentId, input: m.text, via: "chat" });
  return withListener(rt, agentId, async (listener) => {
    const after = (await rt.store.getAgent(agentId))?.lastEventId ?? 0;
    const task: EnqueueTaskRequest = {
      agentId, agentName: def.name, workerTarget: def.workerTarget, input: m.text, options: {}, ...lane,
      ...(m.messageId !== "" ? { idempotencyKey: `chat:${m.messageId}` } : {}),
      turnId: rt.ids.turnId(), now: rt.clock.now(),
    };
    // With a free local loop, the enqueue and its claim go in one round trip (RouteRuntime.enqueueTask).
    const { result: r, rung } = rt.enqueueTask ? await rt.enqueueTask(task, req) : { result: await rt.store.enqueueTask(task), rung: false };
    if (r.status === "definition_conflict") {
      throw new ProblemError("agent_definition_conflict", `Agent "${agentId}" is bound to definition "${r.boundTo}", not "${def.name}"`, {
        extra: { boundTo: r.boundTo },
      });
    }
    if (r.status !== "enqueued" && r.status !== "duplicate") throw new Error(`the store answered ${r.status} to a task`);
    if (r.status === "enqueued") {
      logGrew(rt, agentId);
      if (!rung) rt.wake(agentId, req);
      return { turnId: r.turnId, listener, after, catchUp: false, open: [] };
    }
    // The same message again: its turn's answer from the start.
    return { turnId: r.turnId, listener, after: await turnStart(rt.store, agentId, r.turnId), catchUp: true, open: [] };
  });
}

/** Decides each answer's approval; the answer reads on from there with the turn's open calls. */
export function openDecisions(
  rt: RouteRuntime,
  agentId: string,
  turnId: string,
  answers: readonly ApprovalAnswer[],
  req: Request,
  by: By,
): Promise<OpenedTurn> {
  return withListener(rt, agentId, async (listener) => {
    const after = (await rt.store.getAgent(agentId))?.lastEventId ?? 0;
    for (const a of answers) await decide(rt, agentId, { turnId, ...a }, req, by);
    const calls = await rt.store.getToolCalls(agentId, turnId);
    const open = calls.filter((c) => c.status === "pending").map((c) => ({
      toolCallId: c.toolCallId,
      external: c.external,
      waits: c.approval?.status === "pending" ? "approval" as const : c.external ? "external" as const : "running" as const,
    }));
    return { turnId, listener, after, catchUp: false, open };
  });
}
