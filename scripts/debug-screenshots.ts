/**
 * Takes the debugger page's screenshots in docs/ (the agent list, a running
 * agent, time travel, a verified turn's verdicts) with headless Chromium over a served gatehouse
 * (tests/helpers/debug-page.ts). Run after changing the page:
 *
 *   npx tsx scripts/debug-screenshots.ts
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { launchChromium, startDebugServer, TOKEN } from "../tests/helpers/debug-page.ts";

const DOCS = join(dirname(fileURLToPath(import.meta.url)), "..", "docs");

const server = await startDebugServer();
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1050 } });
  page.on("pageerror", (e) => console.error("page error:", String(e)));
  page.on("console", (m) => console.error("console:", m.text()));
  for (const [id, input] of [["checkout-bug", "Fix the checkout rounding bug"], ["login-flake", "Why does the login test flake?"], ["release-notes", "Draft the release notes"]]) {
    await server.call("POST", `/v1/agents/${id}/tasks`, { agent: "helper", input });
  }
  await server.call("POST", "/v1/agents/invoice-units/tasks", { agent: "invoicer", input: "Bill the support hours" });
  server.release("login-flake");
  server.release("release-notes");
  await new Promise((r) => setTimeout(r, 800));
  const notes = (await server.call("GET", "/v1/agents/release-notes")).body;
  const pending = notes.pendingToolCalls[0];
  if (pending) {
    await server.call("POST", "/v1/agents/release-notes/tool-results", { turnId: notes.activeTurnId, toolCallId: pending.toolCallId, outcome: { ok: true, value: "yes" } });
  }
  await new Promise((r) => setTimeout(r, 800));

  await page.goto(`${server.base}/debug`);
  await page.locator('[data-testid="token-form"] input').fill(TOKEN);
  await page.locator('[data-testid="token-form"] button').click();
  await page.locator('tr[data-agent-id="checkout-bug"]').waitFor();
  await page.screenshot({ path: join(DOCS, "debug-agents.png") });

  await page.locator('tr[data-agent-id="login-flake"] a').click();
  await page.locator('svg.chart [data-active="true"]').waitFor();
  await page.locator('[data-event-type="tool_call"]').first().waitFor();
  await new Promise((r) => setTimeout(r, 500));
  await page.screenshot({ path: join(DOCS, "debug-agent.png"), fullPage: true });

  const events = (await server.call("GET", "/v1/agents/login-flake/events?format=json")).body.events as { id: number; type: string; data: { to?: string } }[];
  const toRunning = events.find((e) => e.type === "transition" && e.data.to === "running")!;
  await page.locator(`[data-event-id="${toRunning.id}"]`).click();
  await page.locator('[data-testid="history-state"]', { hasText: "running" }).waitFor();
  await new Promise((r) => setTimeout(r, 300));
  await page.screenshot({ path: join(DOCS, "debug-time-travel.png"), fullPage: true });

  await page.goto(`${server.base}/debug/agents/invoice-units`);
  await page.locator('svg.chart [data-state="done"][data-active="true"]').waitFor();
  await page.locator('[data-verdict-status="PASS"]').waitFor();
  await new Promise((r) => setTimeout(r, 300));
  await page.screenshot({ path: join(DOCS, "debug-verdicts.png"), fullPage: true });
  console.log("wrote docs/debug-agents.png, docs/debug-agent.png, docs/debug-time-travel.png, docs/debug-verdicts.png");
} finally {
  await browser.close();
  await server.close();
}
