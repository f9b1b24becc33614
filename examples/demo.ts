/**
 * The two example agents `npm start` serves. Both run on scriptedModel, so
 * the README's curl session gives the same answers every time.
 *
 * - `concierge` looks up an order with an in-process tool, asks a human to
 *   approve a refund through an external tool (its result arrives over HTTP),
 *   and finishes with `submit_result`.
 * - `summarizer` proposes an output through `agent_output`; its verifier
 *   rejects a word count that does not match, the model revises, and the
 *   second candidate passes.
 */
import { z } from "zod";
import { defineAgent } from "../agents/define.ts";
import { scriptedModel } from "../models/scripted.ts";
import type { Message } from "../common/message.ts";
import { defineTool } from "../tools/define.ts";
import { VerificationRejected } from "../verification/rejected.ts";

const ORDERS: Record<string, { item: string; amount: number }> = {
  "A-1001": { item: "espresso machine", amount: 249 },
  "A-1002": { item: "milk frother", amount: 39 },
};

export const lookupOrder = defineTool({
  name: "lookup_order",
  description: "Look up an order by id",
  parameters: z.object({ orderId: z.string() }),
  execute: ({ orderId }) => ORDERS[orderId] ?? { error: "unknown order" },
});

export const approveRefund = defineTool({
  name: "approve_refund",
  description: "Ask a human to approve a refund; the answer arrives over HTTP",
  parameters: z.object({ orderId: z.string(), amount: z.number(), currency: z.string() }),
  defaults: { currency: "EUR" },
});

const orderIdOf = (messages: Message[]) => {
  const first = messages.find((m) => m.role === "user")?.content ?? "";
  return /A-\d+/.exec(first)?.[0] ?? "A-1001";
};
const lastToolContent = (messages: Message[]) => [...messages].reverse().find((m) => m.role === "tool")?.content ?? "";

export const concierge = defineAgent({
  name: "concierge",
  instructions: "Handle refund requests. Look the order up, get a human approval, then submit the result.",
  tools: [lookupOrder, approveRefund],
  model: scriptedModel(({ step, messages }) => {
    const orderId = orderIdOf(messages.slice(messages.findLastIndex((m) => m.role === "user")));
    if (step === 1) {
      return { text: "Looking up the order.", toolCalls: [{ name: "lookup_order", args: { orderId } }], usage: { inputTokens: 42, outputTokens: 12 } };
    }
    if (step === 2) {
      const order = JSON.parse(lastToolContent(messages)) as { amount?: number };
      return {
        text: "Asking for approval.",
        toolCalls: [{ name: "approve_refund", args: { orderId, amount: order.amount ?? 0 } }],
        usage: { inputTokens: 80, outputTokens: 15 },
      };
    }
    const answer = lastToolContent(messages);
    return {
      toolCalls: [{ name: "submit_result", args: { result: { orderId, refund: answer.includes("approved") ? "approved" : "declined", note: answer } } }],
      usage: { inputTokens: 120, outputTokens: 20 },
    };
  }),
});

const Summary = z.object({ summary: z.string().min(1), words: z.number().int() });

export const summarizer = defineAgent({
  name: "summarizer",
  instructions: "Summarize the input in one sentence and count its words.",
  output: {
    schema: Summary,
    verify(candidate) {
      const counted = candidate.summary.trim().split(/\s+/).length;
      if (counted !== candidate.words) {
        throw new VerificationRejected({
          message: `The summary has ${counted} words, not ${candidate.words}.`,
          code: "word_count_mismatch",
          metadata: { counted, claimed: candidate.words },
        });
      }
      return { summary: candidate.summary, words: counted, verified: true };
    },
  },
  verifyAttempts: 3,
  model: scriptedModel(({ messages }) => {
    const rejected = messages.some((m) => m.role === "tool" && m.content.includes("<verification_rejected"));
    const summary = "Gatehouse keeps agents durable.";
    return { toolCalls: [{ name: "agent_output", args: { summary, words: rejected ? 4 : 5 } }] };
  }),
});

export const demoAgents = [concierge, summarizer];
