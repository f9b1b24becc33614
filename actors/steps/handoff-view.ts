/**
 * What the target of a handoff sees (agents/handoff.ts `inputFilter`): the
 * model view of a step taken under a target whose handoff has an input
 * filter is the lead system message, the filter's answer over the messages
 * before the handoff, then the messages from the handoff's result on.
 *
 * Invariants:
 * - Derived from the conversation alone: the turn's messages (from its user
 *   message on) are walked from the binding, each successful handoff call
 *   (its tool message answers `{ handedOffTo: <target> }`) switching the
 *   definition whose tools are read, so the handoff in force and the place
 *   it happened are the same at every step, after a restore, a replay or a
 *   fork. The stored conversation is never changed; only the model's view is.
 * - Only the latest handoff of the turn filters (the one the current
 *   definition runs under); one without a filter shows the whole view.
 * - The filter's input is a copy: it cannot change the stored messages. An
 *   answer that is not an array of messages throws, so the step fails like
 *   a model error.
 */
import type { AnyAgent } from "../../agents/define.ts";
import { type HandoffToolDefinition, isHandoffTool } from "../../agents/handoff.ts";
import type { Message } from "../../common/message.ts";

/** The latest successful handoff of the turn in `view` and the index of the last message of its step (its tool results). */
function lastHandoff(view: readonly Message[], binding: AnyAgent, agents: ReadonlyMap<string, AnyAgent>): { tool: HandoffToolDefinition; end: number } | null {
  const start = view.findLastIndex((m) => m.role === "user");
  if (start < 0) return null;
  let current: AnyAgent | undefined = binding;
  let found: { tool: HandoffToolDefinition; end: number } | null = null;
  for (let i = start + 1; i < view.length && current; i++) {
    const m = view[i];
    if (m.role !== "assistant" || !m.toolCalls) continue;
    let end = i;
    while (end + 1 < view.length && view[end + 1].role === "tool") end++;
    const from: AnyAgent = current;
    for (const c of m.toolCalls) {
      const h = from.offeredTools.find((t) => t.name === c.name);
      if (!isHandoffTool(h)) continue;
      const answer = view.slice(i + 1, end + 1).find((r) => r.toolCallId === c.id);
      if (answer && handedOffTo(answer.content) === h.handoffTo) {
        found = { tool: h, end };
        current = agents.get(h.handoffTo);
      }
    }
    i = end;
  }
  return found;
}

function handedOffTo(content: string): string | null {
  try {
    const v = JSON.parse(content) as { handedOffTo?: unknown };
    return v && typeof v === "object" && typeof v.handedOffTo === "string" ? v.handedOffTo : null;
  } catch {
    return null;
  }
}

/**
 * The view the model of `agent` is shown: `view` as it is, unless the turn runs under a handoff with an
 * input filter (see the header). `view[0]` is the lead system message.
 */
export function handoffView(view: Message[], agent: AnyAgent, binding: AnyAgent, agents: ReadonlyMap<string, AnyAgent>): Message[] {
  const h = lastHandoff(view, binding, agents);
  if (!h?.tool.inputFilter || h.tool.handoffTo !== agent.name) return view;
  const before = view.slice(1, h.end + 1).map((m) => structuredClone(m));
  const shown = h.tool.inputFilter(before);
  if (!Array.isArray(shown) || !shown.every((m) => m && typeof m === "object" && typeof m.role === "string" && typeof m.content === "string")) {
    throw new Error(`The input filter of handoff "${h.tool.name}" answered something other than an array of messages`);
  }
  return [view[0], ...shown, ...view.slice(h.end + 1)];
}
