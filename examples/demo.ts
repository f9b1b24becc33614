/**
 * The three example agents `npm start` serves. All run on scriptedModel, so
 * the README's curl session gives the same answers every time.
 *
 * - `concierge` looks up an order with an in-process tool, asks a human to
 *   approve a refund through an external tool (its result arrives over HTTP),
 *   and finishes with `submit_result`.
 * - `summarizer` proposes an output through `agent_output`; its verifier
 *   rejects a word count that does not match, the model revises, and the
 *   second candidate passes.
 * - `cashier` pays out with an in-process tool that needs a person's
 *   approval (`needsApproval`): the call waits until
 *   `POST /v1/agents/:agentId/approvals` decides it, then runs (or, rejected,
 *   the model sees `approval_rejected` and declines).
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

export const sendPayout = defineTool({
  name: "send_payout",
  description: "Send money to a person; a human approves every payout first",
  parameters: z.object({ to: z.string(), amount: z.number(), currency: z.string() }),
  defaults: { currency: "EUR" },
  needsApproval: true,
  execute: ({ to, amount, currency }) => ({ status: "paid", to, amount, currency }),
});

export const cashier = defineAgent({
  name: "cashier",
  instructions: "Pay out what the task asks for, once a human approved it.",
  tools: [sendPayout],
  model: scriptedModel(({ step, messages }) => {
    const task = messages.slice(messages.findLastIndex((m) => m.role === "user"))[0]?.content ?? "";
    if (step === 1) {
      const amount = Number(/\d+/.exec(task)?.[0] ?? 0);
      const to = /to (\w+)/.exec(task)?.[1] ?? "nobody";
      return { text: "Paying out.", toolCalls: [{ name: "send_payout", args: { to, amount } }], usage: { inputTokens: 30, outputTokens: 10 } };
    }
    // The tool's result, or its error: `approval_rejected` (with the person's reason) or `approval_timeout`.
    // A person who edited the arguments when approving is named first, then "Result: " and the result.
    const content = lastToolContent(messages);
    const answer = JSON.parse(content.slice(content.indexOf("\nResult: ") + 1).replace(/^Result: /, "") || "{}") as { error?: { type: string; metadata?: { reason?: string } } };
    const result = answer.error ? { status: "declined", why: answer.error.metadata?.reason ?? answer.error.type } : answer;
    return { toolCalls: [{ name: "submit_result", args: { result } }], usage: { inputTokens: 50, outputTokens: 10 } };
  }),
});

export const demoAgents = [concierge, summarizer, cashier];
