/**
 * A scripted chat world for the chat protocol tests (tests/chat/): one agent
 * definition `assistant` whose model answers by the user's words.
 * - "stream …": says "Hello " live, waits on the next gate the test pushed
 *   (`gates`), then says "world" and answers "Hello world";
 * - "pay N": calls `pay` (needs approval), then answers "after pay: <result>";
 * - anything else: calls `look` (no approval), then answers "seen".
 * `paid` lists the amounts `pay` really paid (a denied call never adds one).
 */
import { z } from "zod";
import { defineAgent, defineTool, type Model } from "../../mod.ts";

export interface Gate {
  open: () => void;
  wait: Promise<void>;
}

export function gate(): Gate {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { open, wait };
}

export function chatWorld() {
  const paid: number[] = [];
  const gates: Gate[] = [];
  const model: Model = {
    name: "chat-test",
    async generate(req) {
      const lastUser = req.messages.findLastIndex((m) => m.role === "user");
      const said = String(req.messages[lastUser].content);
      const tools = req.messages.slice(lastUser).filter((m) => m.role === "tool");
      if (said.startsWith("stream")) {
        req.onChunk?.("Hello ");
        const g = gates.shift() ?? gate();
        await g.wait;
        req.onChunk?.("world");
        return { text: "Hello world" };
      }
      if (said.startsWith("pay")) {
        if (tools.length === 0) return { toolCalls: [{ name: "pay", args: { amount: Number(said.split(" ")[1]) } }] };
        return { text: `after pay: ${String(tools[0].content).slice(0, 60)}` };
      }
      if (tools.length === 0) return { toolCalls: [{ name: "look", args: { q: said } }] };
      return { text: "seen" };
    },
  };
  const pay = defineTool({
    name: "pay", description: "Pay", parameters: z.object({ amount: z.number() }), needsApproval: true,
    execute: ({ amount }) => (paid.push(amount), { paid: amount }),
  });
  const look = defineTool({ name: "look", description: "Look", parameters: z.object({ q: z.string() }), execute: ({ q }) => ({ found: q }) });
  const agent = defineAgent({ name: "assistant", instructions: "Help.", model, tools: [pay, look] });
  return { agent, paid, gates };
}

export const CHAT_TOKEN = "chat-admin-token-0123456789";
export const CHAT_SCOPED = "chat-tenant-a-token-0123456";
export const CHAT_NO_APPROVE = "chat-no-approve-token-01234";

/** The tokens of the chat tests: an admin, a token of tenant `a-`, and one of `a-` without `approve`. */
export function chatAuth() {
  type Verb = "read" | "enqueue" | "approve";
  return {
    tokens: [
      CHAT_TOKEN,
      { token: CHAT_SCOPED, tenants: ["a-"], verbs: ["read", "enqueue", "approve"] as Verb[] },
      { token: CHAT_NO_APPROVE, tenants: ["a-"], verbs: ["read", "enqueue"] as Verb[] },
    ],
  };
}
