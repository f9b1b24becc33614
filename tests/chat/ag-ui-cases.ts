/**
 * The AG-UI cases (routes/chat/ag-ui.ts, docs/http.md "AG-UI"), read by
 * `@ag-ui/client`'s own `HttpAgent`, against any gatehouse a rig opens
 * (memory in process: tests/chat/ag-ui.test.ts; Redis over a socket:
 * tests/chat/ag-ui-redis.int.test.ts). Live text arrives while the model
 * works (the model waits on a gate the test opens only after the client saw
 * the first words), a tool call with its result, an approval as an AG-UI
 * interrupt approved and one denied through `resume` (the denied tool never
 * runs).
 */
import { type BaseEvent, EventType, HttpAgent, type Message } from "@ag-ui/client";
import { expect } from "vitest";
import type { Gatehouse } from "../../mod.ts";
import { CHAT_TOKEN, type Gate, gate } from "../helpers/chat-world.ts";

export interface AgUiRig {
  gh: Gatehouse;
  /** The base URL requests go to. */
  url: string;
  /** The fetch the client uses (in process: the app's own). */
  fetch: (url: string, init: RequestInit) => Promise<Response>;
  paid: number[];
  gates: Gate[];
}

export function agUiAgent(r: AgUiRig, threadId: string, token = CHAT_TOKEN): HttpAgent {
  return new HttpAgent({ url: `${r.url}/v1/ag-ui`, threadId, headers: { authorization: `Bearer ${token}` }, fetch: r.fetch });
}

let runs = 0;

/** One run: the events the client applied, in order, and its result. */
export async function run(agent: HttpAgent, extra: { resume?: Array<Record<string, unknown>> } = {}, onEvent?: (e: BaseEvent) => void) {
  const events: BaseEvent[] = [];
  const result = await agent.runAgent({ runId: `run-${++runs}`, forwardedProps: { agent: "assistant" }, ...(extra as object) }, {
    onEvent: ({ event }) => {
      events.push(event);
      onEvent?.(event);
    },
  });
  return { events, result };
}

export const user = (id: string, content: string): Message => ({ id, role: "user", content });

const ofType = (events: BaseEvent[], t: EventType) => events.filter((e) => e.type === t) as Array<BaseEvent & Record<string, any>>;
const lastFinish = (events: BaseEvent[]) => ofType(events, EventType.RUN_FINISHED).at(-1);
const textOf = (events: BaseEvent[]) => ofType(events, EventType.TEXT_MESSAGE_CONTENT).map((e) => e.delta).join("");

export async function liveText(r: AgUiRig, threadId: string): Promise<void> {
  const g = gate();
  r.gates.push(g);
  const agent = agUiAgent(r, threadId);
  agent.addMessage(user("m-live", "stream please"));
  let sawLive = false;
  const { events } = await run(agent, {}, (e) => {
    if (!sawLive && e.type === EventType.TEXT_MESSAGE_CONTENT && (e as { delta?: string }).delta === "Hello ") {
      sawLive = true;
      g.open(); // the model finishes only after the client saw its first words
    }
  });
  expect(sawLive).toBe(true);
  expect(events[0].type).toBe(EventType.RUN_STARTED);
  expect(events.at(-1)).toMatchObject({ type: EventType.RUN_FINISHED, threadId, outcome: { type: "success" } });
  expect(textOf(events)).toBe("Hello world");
  const snapshots = ofType(events, EventType.STATE_SNAPSHOT).map((e) => e.snapshot.status);
  expect(snapshots).toEqual(["running", "done"]);
  expect(agent.state).toMatchObject({ agentId: threadId, status: "done" });
  const said = agent.messages.filter((m) => m.role === "assistant").map((m) => m.content).join("");
  expect(said).toBe("Hello world");
}

export async function toolCall(r: AgUiRig, threadId: string): Promise<void> {
  const agent = agUiAgent(r, threadId);
  agent.addMessage(user("m-look", "look here"));
  const { events } = await run(agent);
  const start = ofType(events, EventType.TOOL_CALL_START)[0];
  expect(start).toMatchObject({ toolCallName: "look" });
  expect(JSON.parse(ofType(events, EventType.TOOL_CALL_ARGS).map((e) => e.delta).join(""))).toEqual({ q: "look here" });
  expect(ofType(events, EventType.TOOL_CALL_END)[0]).toMatchObject({ toolCallId: start.toolCallId });
  const result = ofType(events, EventType.TOOL_CALL_RESULT)[0];
  expect(result).toMatchObject({ toolCallId: start.toolCallId, role: "tool" });
  expect(JSON.parse(result.content)).toEqual({ found: "look here" });
  expect(textOf(events)).toBe("seen");
  expect(lastFinish(events)).toMatchObject({ outcome: { type: "success" } });
  // The client's own view: the call and its result.
  const call = agent.messages.find((m) => m.role === "assistant" && (m.toolCalls ?? []).length > 0);
  expect(call?.role === "assistant" ? call.toolCalls?.[0]?.function.name : undefined).toBe("look");
  expect(agent.messages.some((m) => m.role === "tool" && m.toolCallId === start.toolCallId)).toBe(true);
}

/** "pay N": the run ends on an approval interrupt; the resume decides it. */
export async function approval(r: AgUiRig, threadId: string, approved: boolean): Promise<void> {
  const agent = agUiAgent(r, threadId);
  agent.addMessage(user(`m-pay-${threadId}`, "pay 7"));
  const first = await run(agent);
  const call = ofType(first.events, EventType.TOOL_CALL_START)[0];
  expect(call).toMatchObject({ toolCallName: "pay" });
  const finish = lastFinish(first.events)!;
  expect(finish.outcome.type).toBe("interrupt");
  expect(finish.outcome.interrupts).toHaveLength(1);
  const interrupt = finish.outcome.interrupts[0];
  expect(interrupt).toMatchObject({ id: call.toolCallId, toolCallId: call.toolCallId, reason: "tool_approval" });
  expect(agent.pendingInterrupts.map((i) => i.id)).toEqual([call.toolCallId]);
  expect(ofType(first.events, EventType.TOOL_CALL_RESULT)).toEqual([]);
  expect(ofType(first.events, EventType.STATE_SNAPSHOT).at(-1)?.snapshot.status).toBe("waiting");
  expect(r.paid).toEqual([]);

  const second = await run(agent, { resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved } }] });
  expect(second.events[0].type).toBe(EventType.RUN_STARTED);
  const result = ofType(second.events, EventType.TOOL_CALL_RESULT)[0];
  expect(result).toMatchObject({ toolCallId: call.toolCallId });
  expect(JSON.parse(result.content)).toEqual(approved ? { paid: 7 } : { denied: true });
  expect(textOf(second.events)).toMatch(/^after pay: /);
  expect(lastFinish(second.events)).toMatchObject({ outcome: { type: "success" } });
  expect(r.paid).toEqual(approved ? [7] : []); // the denied tool never ran
}
