/**
 * The debugger page shows a call waiting for a named event (its name and
 * deadline) and sends the event from its form: the call resolves and the
 * turn finishes. Drives Debian's chromium through playwright-core; the
 * screenshot is written to named-event-wait.png in the system's temp folder.
 */
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import { launchChromium } from "../helpers/debug-page.ts";

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

it("lists the event a call waits for and sends it from the page", async () => {
  const wait = defineTool({
    name: "await_signature",
    description: "Wait until the document is signed",
    parameters: z.object({ doc: z.string() }),
    waitFor: (args) => ({ event: `document.signed:${String(args.doc)}` }),
  });
  const agent = defineAgent({
    name: "signer",
    instructions: "Wait for the signature.",
    model: scriptedModel(({ step, messages }) =>
      step === 1
        ? { toolCalls: [{ name: "await_signature", args: { doc: "d-17" } }] }
        : { toolCalls: [{ name: "submit_result", args: { result: String(messages.at(-1)?.content ?? "") } }] }
    ),
    tools: [wait],
  });
  const gh = createGatehouse({ agents: [agent], sse: { pollMs: 50 } });
  gh.startWorker();
  const server = serve({ fetch: gh.fetch, port: 0, hostname: "127.0.0.1" });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const t = await fetch(`${base}/v1/agents/s-1/tasks`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "signer", input: "sign" }),
    });
    expect(t.status).toBe(202);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${base}/debug/agents/s-1`);
    const name = page.locator('[data-testid="event-name"]');
    await name.waitFor({ timeout: 20_000 });
    expect(await name.textContent()).toBe("document.signed:d-17");
    await page.locator('[data-event-wait] textarea').fill('{"by":"ana"}');
    await page.screenshot({ path: join(tmpdir(), "named-event-wait.png"), fullPage: true });
    await page.locator('[data-testid="send-event"]').click();
    // Resolved, the call leaves the pending list (and its form with it); the turn finishes with the data.
    await page.locator('[data-testid="live-state"]', { hasText: "done" }).waitFor({ timeout: 20_000 });
    const view = await (await fetch(`${base}/v1/agents/s-1`)).json() as { state: string; output: string };
    expect(view).toMatchObject({ state: "done" });
    expect(view.output).toContain("ana");
    await page.close();
  } finally {
    const closed = new Promise<void>((r) => server.close(() => r()));
    (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
    await closed;
    await gh.close();
  }
});
