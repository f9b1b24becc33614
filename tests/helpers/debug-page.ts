/**
 * A gatehouse served over real HTTP (@hono/node-server on a free port) with
 * bearer auth on (or off: `{ auth: false }`; `tokenName` names the token, recorded as `by`), plus headless Chromium (Debian's, via playwright-core) to
 * drive the debugger page. Shared by tests/debug/debug-page.int.test.ts and
 * scripts/debug-screenshots.ts.
 *
 * The `helper` agent's first model step waits for `release(agentId)`, so a
 * test can see `running` live before the turn moves on; it then calls the
 * external tool `ask_human` (the turn waits in `waiting-tools` for a result)
 * and submits once the result arrives.
 *
 * The `invoicer` agent proposes `{ units: -2 }` first and `{ units: 3 }`
 * next; its output verifier rejects units that are not positive ("units must
 * be positive"), so a turn writes a NEEDS_CHANGES verdict (attempt 1 of 3)
 * and then a PASS one.
 *
 * The `payer` agent calls the in-process tool `pay`, which needs a person's
 * approval (`needsApproval`): the call waits in `waiting-tools` with
 * `approval: "pending"` until the page's Approve / Reject buttons decide it;
 * `payments()` lists the amounts `pay` actually paid. The `remitter` agent
 * calls the external tool `remit` `{ amount: 40 }`, which needs approval too:
 * approved (edited or not), it waits for its result over HTTP, so the page
 * shows the approved call's arguments (proposed and edited).
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type Browser, chromium } from "playwright-core";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, handoff, scriptedModel, VerificationRejected } from "../../mod.ts";

export const TOKEN = "debug-page-test-token-0123456789";
export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
];

export async function startDebugServer(opts: { auth?: boolean; tokenName?: string } = {}) {
  const gates = new Map<string, { promise: Promise<void>; open: () => void }>();
  const gate = (agentId: string) => {
    let g = gates.get(agentId);
    if (!g) {
      let open!: () => void;
      const promise = new Promise<void>((r) => (open = r));
      g = { promise, open };
      gates.set(agentId, g);
    }
    return g;
  };
  const ask = defineTool({ name: "ask_human", description: "Ask a human", parameters: z.object({ q: z.string() }) });
  const helper = defineAgent({
    name: "helper",
    instructions: "Ask a human, then submit what they said.",
    model: scriptedModel(async (ctx) => {
      if (ctx.step === 1) {
        await gate(ctx.agentId).promise;
        return { text: "Let me ask.", toolCalls: [{ name: "ask_human", args: { q: "Ship the fix?" } }], usage: { inputTokens: 412, outputTokens: 38 }, cost: 0.0021 };
      }
      const last = ctx.messages[ctx.messages.length - 1];
      return { toolCalls: [{ name: "submit_result", args: { result: `human said ${JSON.stringify(last?.content ?? null)}` } }], usage: { inputTokens: 530, outputTokens: 21 }, cost: 0.0024 };
    }),
    tools: [ask],
  });
  const invoicer = defineAgent({
    name: "invoicer",
    instructions: "Propose the invoice line.",
    model: scriptedModel(({ step }) => ({ toolCalls: [{ name: "agent_output", args: { units: step === 1 ? -2 : 3 } }] })),
    output: {
      schema: z.object({ units: z.number() }),
      verify: (c: { units: number }) => {
        if (c.units <= 0) throw new VerificationRejected({ message: "units must be positive", code: "bad_units" });
        return c;
      },
    },
    verifyAttempts: 3,
  });
  // Hands every task to the invoicer (agents/handoff.ts): the page's head then reads `front → invoicer`.
  const front = defineAgent({
    name: "front",
    instructions: "Hand billing to the invoicer.",
    model: scriptedModel(() => ({ toolCalls: [{ name: "transfer_to_invoicer", args: {} }] })),
    tools: [handoff(invoicer)],
  });
  const paid: number[] = [];
  const pay = defineTool({
    name: "pay", description: "Pay an amount", parameters: z.object({ amount: z.number() }), needsApproval: true,
    execute: ({ amount }) => (paid.push(amount), { paid: amount }),
  });
  const payer = defineAgent({
    name: "payer",
    instructions: "Pay what the task asks for.",
    model: scriptedModel((ctx) => {
      if (ctx.step === 1) return { toolCalls: [{ name: "pay", args: { amount: 40 } }] };
      const last = ctx.messages[ctx.messages.length - 1];
      return { toolCalls: [{ name: "submit_result", args: { result: String(last?.content ?? "") } }] };
    }),
    tools: [pay],
  });
  const remit = defineTool({ name: "remit", description: "Remit an amount", parameters: z.object({ amount: z.number().positive() }), needsApproval: true });
  const remitter = defineAgent({
    name: "remitter",
    instructions: "Remit what the task asks for.",
    model: scriptedModel((ctx) => {
      if (ctx.step === 1) return { toolCalls: [{ name: "remit", args: { amount: 40 } }] };
      const last = ctx.messages[ctx.messages.length - 1];
      return { toolCalls: [{ name: "submit_result", args: { result: String(last?.content ?? "") } }] };
    }),
    tools: [remit],
  });
  const auth = opts.auth ?? true;
  const gh = createGatehouse({ agents: [helper, invoicer, front, payer, remitter], ...(auth ? { auth: opts.tokenName === undefined ? { bearerTokens: [TOKEN] } : { tokens: [{ token: TOKEN, name: opts.tokenName }] } } : {}), sse: { pollMs: 50 } });
  gh.startWorker();
  const server = serve({ fetch: gh.fetch, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(auth ? { authorization: `Bearer ${TOKEN}` } : {}),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: await res.json() as any };
  };
  return {
    gh,
    base,
    call,
    release: (agentId: string) => gate(agentId).open(),
    payments: () => [...paid],
    async close() {
      for (const g of gates.values()) g.open();
      const closed = new Promise<void>((r) => server.close(() => r()));
      // Open SSE responses would keep the server from closing.
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      await closed;
      await gh.close();
    },
  };
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}
