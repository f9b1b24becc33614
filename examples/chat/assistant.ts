/**
 * The chat example's agent, `assistant`: a scripted model that streams its
 * answer one word at a time (waiting `pace()` before each word, 120 ms by
 * default) so the page shows tokens arriving, and one tool, `refund`, that
 * needs a person's approval (`needsApproval`).
 *
 * - A message with "refund" and a number ("refund 40"): the model calls
 *   `refund({ amount: 40 })`; the call waits for Approve / Deny on the page,
 *   then the model says what came of it.
 * - Anything else: a few sentences about the message, streamed slowly.
 *
 * Swap `slowModel` for a real one (`aiSdkModel(anthropic(...))`,
 * `openaiCompatible(...)`, docs/models.md) and the page stays the same.
 */
import { z } from "zod";
import { defineAgent, defineTool, type Message, type Model } from "@gatehouse-runtime/core";

/** Waits before word `word` (0-based) of an answer of `of` words. */
export type Pace = (word: number, of: number) => Promise<void>;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export const refund = defineTool({
  name: "refund",
  description: "Refund an amount to the customer; a person approves every refund first",
  parameters: z.object({ amount: z.number().positive() }),
  needsApproval: true,
  execute: ({ amount }) => ({ refunded: amount, currency: "EUR" }),
});

/** The model's answer once the refund call has its result (or was denied). */
function afterRefund(result: Message): string {
  const r = JSON.parse(result.content) as { refunded?: number; error?: { type: string; metadata?: { reason?: string } } };
  if (r.refunded !== undefined) return `Done: ${r.refunded} EUR are on their way back to you.`;
  const why = r.error?.metadata?.reason ?? r.error?.type ?? "no reason given";
  return `The refund was not approved (${why}), so nothing was paid.`;
}

export function slowModel(pace: Pace = () => sleep(120)): Model {
  return {
    name: "slow-demo",
    async generate(req) {
      const turn = req.messages.slice(req.messages.findLastIndex((m) => m.role === "user"));
      const said = turn[0]?.content ?? "";
      const result = turn.find((m) => m.role === "tool");
      const amount = /refund\D*(\d+)/i.exec(said)?.[1];
      if (amount !== undefined && !result) return { toolCalls: [{ name: "refund", args: { amount: Number(amount) } }] };
      const text = result
        ? afterRefund(result)
        : `You said: "${said}". This answer arrives one word at a time while the model works; the turn lives on the server, so reload the page halfway and it still ends here.`;
      const words = text.match(/\S+\s*/g) ?? [];
      for (let i = 0; i < words.length; i++) {
        await pace(i, words.length);
        req.signal.throwIfAborted();
        req.onChunk?.(words[i]);
      }
      return { text };
    },
  };
}

export function createAssistant(pace?: Pace) {
  return defineAgent({
    name: "assistant",
    instructions: "Answer the customer. Refunds go through the refund tool.",
    model: slowModel(pace),
    tools: [refund],
  });
}

export const assistant = createAssistant();
