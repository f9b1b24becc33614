/**
 * The debugger page shows who did it (debug-ui/model.js `summarize`,
 * debug-ui/app.js pending calls): with a named token, an approval decided
 * from the page reads `by <name>` on its `approval_decided` row, and a
 * result delivered from the page `by <name>` on its `tool_result_received`
 * row; a cancel likewise. Headless Chromium (tests/helpers/debug-page.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { launchChromium, startDebugServer, TOKEN } from "../helpers/debug-page.ts";

let browser: Browser;
let server: Awaited<ReturnType<typeof startDebugServer>>;
beforeAll(async () => {
  server = await startDebugServer({ tokenName: "alice@ops" });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const row = (page: Page, type: string) => page.locator(`li[data-event-type="${type}"] .esum`).first();

describe("debugger page: by", () => {
  it("shows the token's name on the decision, the delivered result and the cancel", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${server.base}/debug`);
    await page.locator('[data-testid="token-form"] input').fill(TOKEN);
    await page.locator('[data-testid="token-form"] button').click();
    await page.locator("table.agents").waitFor();

    expect((await server.call("POST", "/v1/agents/pay-1/tasks", { agent: "payer", input: "Pay 40" })).status).toBe(202);
    await page.goto(`${server.base}/debug/agents/pay-1`);
    const panel = page.locator('[data-approval-for] [data-testid="approve"]');
    await panel.waitFor({ timeout: 15_000 });
    await panel.click();
    await row(page, "approval_decided").waitFor({ timeout: 15_000 });
    expect(await row(page, "approval_decided").textContent()).toMatch(/pay approved\s+· by alice@ops/);
    await page.locator("li[data-event-type]").first().locator("xpath=ancestor::section[1]").screenshot({ path: "/tmp/debug-by-approval.png" });

    expect((await server.call("POST", "/v1/agents/ask-1/tasks", { agent: "helper", input: "Ship?" })).status).toBe(202);
    server.release("ask-1");
    await page.goto(`${server.base}/debug/agents/ask-1`);
    const form = page.locator("form.pending");
    await form.waitFor({ timeout: 15_000 });
    await form.locator('textarea[name="value"]').fill('"yes"');
    await form.locator('button[type="submit"]').click();
    await row(page, "tool_result_received").waitFor({ timeout: 15_000 });
    expect(await row(page, "tool_result_received").textContent()).toMatch(/ask_human ok received via http\s+· by alice@ops/);
    await page.locator("li[data-event-type]").first().locator("xpath=ancestor::section[1]").screenshot({ path: "/tmp/debug-by-result.png" });

    expect((await server.call("POST", "/v1/agents/ask-2/tasks", { agent: "helper", input: "Ship?" })).status).toBe(202);
    server.release("ask-2");
    await page.goto(`${server.base}/debug/agents/ask-2`);
    await page.locator("form.pending").waitFor({ timeout: 15_000 });
    await page.locator('[data-testid="cancel"]').click();
    await row(page, "cancel_requested").waitFor({ timeout: 15_000 });
    expect(await row(page, "cancel_requested").textContent()).toMatch(/Cancelled from the debugger\s+· by alice@ops/);
    await page.locator("li[data-event-type]").first().locator("xpath=ancestor::section[1]").screenshot({ path: "/tmp/debug-by-cancel.png" });
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
