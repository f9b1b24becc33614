/**
 * The chat example (examples/chat/) in a real browser: headless Debian
 * Chromium driven by playwright-core, a fresh profile per launch, against the
 * example's server run as a child process (tests/helpers/chat-example-server.ts:
 * examples/chat/server.ts with the example's assistant, whose model stops in
 * the middle of each answer until this test opens its gate).
 *
 * - Memory store: a message typed into the page; the first half of the
 *   answer shows while the model still waits at the gate (text grows while
 *   the model works); a reload mid-answer opens the same chat (`?chat=`),
 *   resumes the running turn (`GET /v1/chat/:id/stream`) and, once the gate
 *   opens, ends with the whole answer, once; a refund approved from the page
 *   runs and the model answers with its result; one denied ends as denied;
 *   a reload shows the whole conversation from `GET /v1/chat/:id/messages`.
 * - Redis (a redis-server started here): the server is SIGKILLed mid-answer
 *   and started again on the same port; the reloaded page shows the answer
 *   the second server finished.
 *
 * No verdict depends on speed: every wait is for a state of the page, and
 * the model's progress is held by the gate. Screenshots go to
 * `$CHAT_SCREENSHOTS` (default: the temp dir).
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Browser, chromium, type Page } from "playwright-core";
import { buildChatPage } from "../../examples/chat/build.ts";
import type { ChatExampleConfig } from "../helpers/chat-example-server.ts";
import { CHROMIUM, CHROMIUM_ARGS } from "../helpers/debug-page.ts";
import { spawnScript, type WorkerHandle } from "../helpers/processes.ts";
import { freePort, type RedisServer, startRedisServer } from "../helpers/redis-server.ts";

const SCRIPT = fileURLToPath(new URL("../helpers/chat-example-server.ts", import.meta.url));
const SHOTS = process.env.CHAT_SCREENSHOTS ?? tmpdir();
const WAIT = { timeout: 30_000 };

/** The gate the model asks in the middle of every answer: held while closed. */
interface Gate {
  url: string;
  open(): void;
  close(): void;
  stop(): Promise<void>;
}

async function startGate(): Promise<Gate> {
  let isOpen = false;
  let held: ServerResponse[] = [];
  const server: Server = createServer((_req, res) => (isOpen ? res.end("go") : held.push(res)));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const open = () => {
    isOpen = true;
    for (const res of held) res.end("go");
    held = [];
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/gate`,
    open,
    close() {
      isOpen = false;
    },
    async stop() {
      open();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

let dist: string;
let gate: Gate;
let browser: Browser;
let redis: RedisServer;
const children: WorkerHandle[] = [];

beforeAll(async () => {
  dist = mkdtempSync(join(tmpdir(), "gatehouse-chat-page-"));
  await buildChatPage(dist);
  gate = await startGate();
  redis = await startRedisServer();
  // A fresh, empty profile (user-data-dir) per launch.
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  for (const c of children) await c.stop();
  await gate?.stop();
  await redis?.stop();
  if (dist) rmSync(dist, { recursive: true, force: true });
});

async function startExample(name: string, cfg: Omit<ChatExampleConfig, "dist" | "gateUrl" | "leaseMs">) {
  const child = await spawnScript(SCRIPT, name, { GH_CHAT_EXAMPLE: JSON.stringify({ ...cfg, dist, gateUrl: gate.url, leaseMs: 1_000 }) });
  children.push(child);
  await child.ready;
  return child;
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `chat-${name}.png`), fullPage: true });
const assistants = (page: Page) => page.locator('.msg[data-role="assistant"]');
const lastAnswer = (page: Page) => assistants(page).last().locator("p");
/** Opens the page and waits until it wrote its chat id into the URL; returns the id. */
async function open(page: Page, base: string): Promise<string> {
  await page.goto(base);
  await page.locator('[data-testid="status"]').waitFor(WAIT);
  const id = new URL(page.url()).searchParams.get("chat");
  expect(id).toMatch(/^chat-/);
  return id!;
}

const textOf = async (page: Page) => (await lastAnswer(page).allTextContents()).join("");

async function send(page: Page, text: string) {
  await page.locator('[data-testid="status"][data-status="ready"]').waitFor(WAIT);
  await page.locator('[data-testid="input"]').fill(text);
  await page.locator('[data-testid="send"]').click();
}

const FIRST_HALF = "This answer arrives";
const END = "so reload the page halfway and it still ends here.";

describe("chat example page (Chromium)", () => {
  it("streams tokens while the model works, resumes after a reload, approves and denies a refund", async () => {
    gate.close();
    const port = await freePort();
    await startExample("memory", { port });
    const base = `http://127.0.0.1:${port}`;
    const page = await browser.newPage({ viewport: { width: 900, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    const chatId = await open(page, base);

    // Tokens arrive while the model still works: it waits at the gate with half its answer written.
    await send(page, "hello there");
    await lastAnswer(page).filter({ hasText: FIRST_HALF }).waitFor(WAIT);
    expect(await textOf(page)).not.toContain(END);
    await page.locator('[data-testid="status"][data-status="streaming"]').waitFor(WAIT);
    await shot(page, "1-streaming");

    // Reload mid-answer: the same chat, the turn resumed (running), then the whole answer once the model goes on.
    await page.reload();
    expect(new URL(page.url()).searchParams.get("chat")).toBe(chatId);
    await page.locator('.msg[data-role="user"]', { hasText: "hello there" }).waitFor(WAIT);
    await page.locator('[data-turn-status="running"]').waitFor(WAIT);
    expect(await textOf(page)).not.toContain(END);
    await shot(page, "2-reloaded-running");
    gate.open();
    await page.locator('[data-turn-status="done"]').waitFor(WAIT);
    expect(await textOf(page)).toBe(`You said: "hello there". ${FIRST_HALF} one word at a time while the model works; the turn lives on the server, ${END}`);
    expect(await assistants(page).count()).toBe(1);
    await shot(page, "3-resumed-done");

    // A refund approved from the page runs; the answer goes on with its result.
    await send(page, "refund 40");
    const approved = page.locator(".tool").last();
    await approved.locator('[data-testid="approve"]').waitFor(WAIT);
    expect(await approved.getAttribute("data-state")).toBe("approval-requested");
    await shot(page, "4-approval-requested");
    await approved.locator('[data-testid="approve"]').click();
    await page.locator('.tool[data-state="output-available"]').waitFor(WAIT);
    await lastAnswer(page).filter({ hasText: "Done: 40 EUR are on their way back to you." }).waitFor(WAIT);
    expect(await page.locator('.tool[data-state="output-available"]').textContent()).toContain('"refunded":40');

    // One denied: the call ends denied, the model says nothing was paid.
    await send(page, "refund 7");
    await page.locator('.tool[data-state="approval-requested"] [data-testid="deny"]').click(WAIT);
    await page.locator('.tool[data-state="output-denied"]').waitFor(WAIT);
    await lastAnswer(page).filter({ hasText: "not approved (denied on the page), so nothing was paid." }).waitFor(WAIT);
    await page.locator('[data-testid="status"][data-status="ready"]').waitFor(WAIT);
    await shot(page, "5-approved-and-denied");

    // A reload shows the whole conversation from the server's history.
    await page.reload();
    await page.locator('.tool[data-state="output-denied"]').waitFor(WAIT);
    expect(await page.locator(".msg").evaluateAll((els) => els.map((e) => e.getAttribute("data-role")))).toEqual([
      "user", "assistant", "user", "assistant", "user", "assistant",
    ]);
    expect(await page.locator(".tool").evaluateAll((els) => els.map((e) => e.getAttribute("data-state")))).toEqual([
      "output-available", "output-denied",
    ]);
    expect(await assistants(page).first().locator("p").textContent()).toContain(END);
    await shot(page, "6-history");
    expect(errors).toEqual([]);
    await page.close();
  }, 180_000);

  it("with Redis: the server SIGKILLed mid-answer and started again, the reloaded page shows the finished answer", async () => {
    gate.close();
    const port = await freePort();
    const cfg = { port, redis: { url: redis.url, prefix: `chat${Date.now().toString(36)}:` } };
    const first = await startExample("redis-1", cfg);
    const base = `http://127.0.0.1:${port}`;
    const page = await browser.newPage({ viewport: { width: 900, height: 700 } });
    const chatId = await open(page, base);

    await send(page, "survive a crash");
    await lastAnswer(page).filter({ hasText: FIRST_HALF }).waitFor(WAIT);
    expect(await textOf(page)).not.toContain(END);

    // The server dies mid-answer: the page's stream breaks.
    first.signal("SIGKILL");
    await first.exited;
    await page.locator(".error").waitFor(WAIT);
    await shot(page, "7-server-killed");

    // Started again on the same port and Redis: it takes the turn over once the dead one's lease ran out.
    await startExample("redis-2", cfg);
    await page.reload();
    expect(new URL(page.url()).searchParams.get("chat")).toBe(chatId);
    await page.locator('.msg[data-role="user"]', { hasText: "survive a crash" }).waitFor(WAIT);
    gate.open();
    await page.locator('[data-turn-status="done"]').waitFor(WAIT);
    expect(await textOf(page)).toBe(`You said: "survive a crash". ${FIRST_HALF} one word at a time while the model works; the turn lives on the server, ${END}`);
    expect(await assistants(page).count()).toBe(1);
    await shot(page, "8-restarted-done");

    // The server's own record agrees: one answer, whole.
    const history = await (await fetch(`${base}/v1/chat/${chatId}/messages`)).json() as Array<{ role: string; parts: Array<{ type: string; text?: string }> }>;
    expect(history.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(history[1].parts.filter((p) => p.type === "text").map((p) => p.text).join("")).toContain(END);
    await page.close();
  }, 180_000);
});
