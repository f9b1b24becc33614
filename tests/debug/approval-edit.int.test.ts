/**
 * The debugger page's edit-then-approve (debug-ui/app.js ApprovalForm,
 * "Approve edited"), in headless Chromium over a served gatehouse
 * (tests/helpers/debug-page.ts): the edited arguments are what the tool runs
 * with, the event list names the edit, a refused edit shows the route's
 * problem and decides nothing, and an approved external call shows both the
 * proposed and the edited arguments in the pending-calls panel.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { launchChromium, startDebugServer, TOKEN } from "../helpers/debug-page.ts";

let server: Awaited<ReturnType<typeof startDebugServer>>;
let browser: Browser;

beforeAll(async () => {
  server = await startDebugServer();
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function openAgent(page: Page, agentId: string, agent: string) {
  expect((await server.call("POST", `/v1/agents/${agentId}/tasks`, { agent, input: "Pay 40" })).status).toBe(202);
  await page.goto(`${server.base}/debug`);
  await page.locator('[data-testid="token-form"] input').fill(TOKEN);
  await page.locator('[data-testid="token-form"] button').click();
  await page.locator("table.agents").waitFor();
  await page.goto(`${server.base}/debug/agents/${agentId}`);
  await page.locator('svg.chart [data-state="waiting-tools"][data-active="true"]').waitFor({ timeout: 15_000 });
  const call = (await server.call("GET", `/v1/agents/${agentId}`)).body.pendingToolCalls[0];
  expect(call.approval).toBe("pending");
  const panel = page.locator(`[data-approval-for="${call.toolCallId}"]`);
  await panel.waitFor();
  return { call, panel };
}

describe("debugger page: edit, then approve (Chromium)", () => {
  it("a refused edit shows validation_failed and decides nothing; an accepted one runs the tool with the edited args", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    const { panel } = await openAgent(page, "edit-pay", "payer");
    await panel.locator('textarea[name="args"]').fill('{ "amount": "lots" }');
    await panel.locator('[data-testid="approve-edited"]').click();
    await panel.locator(".error", { hasText: "args.amount" }).waitFor();
    expect((await server.call("GET", "/v1/agents/edit-pay")).body.pendingToolCalls[0].approval).toBe("pending");

    await panel.locator('textarea[name="args"]').fill('{ "amount": 25 }');
    await panel.locator('[data-testid="approve-edited"]').click();
    await page.locator('svg.chart [data-state="done"][data-active="true"]').waitFor({ timeout: 15_000 });
    expect(server.payments()).toEqual([25]);
    const out = (await server.call("GET", "/v1/agents/edit-pay")).body.output as string;
    expect(out).toContain("A person edited the arguments of this call before approving it");
    await page.locator('[data-event-type="approval_decided"]', { hasText: "edited: pay(" }).first().waitFor();
    expect(await page.locator('[data-event-type="approval_decided"]').first().innerText()).toMatch(/approved.*edited: pay\(.*25/);
    await page.screenshot({ path: "/tmp/debug-approval-edited-events.png", fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it("an approved external call shows the proposed and the edited arguments", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    const { call, panel } = await openAgent(page, "edit-remit", "remitter");
    await panel.locator('textarea[name="args"]').fill('{ "amount": 7 }');
    await panel.locator('[data-testid="approve-edited"]').click();
    const shown = page.locator(`[data-tool-call-id="${call.toolCallId}"] [data-testid="edited-args"]`);
    await shown.waitFor({ timeout: 15_000 });
    expect(JSON.parse(await shown.locator('[data-args="proposed"]').innerText())).toEqual({ amount: 40 });
    expect(JSON.parse(await shown.locator('[data-args="edited"]').innerText())).toEqual({ amount: 7 });
    await page.screenshot({ path: "/tmp/debug-approval-edited-pending.png", fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
