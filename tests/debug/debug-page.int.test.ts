/**
 * The debugger page in a real browser (headless Debian Chromium driven by
 * playwright-core) against a gatehouse served over HTTP with bearer auth on:
 * the token form, the agent list, the live statechart following a turn
 * (`data-active` equals `GET /v1/agents/:id`'s state while the turn runs and
 * after it ends), time travel, delivering a pending tool result from its
 * form, approving and rejecting a call that needs approval from the
 * pending-calls panel (Approve / Reject, `data-approval-for`), fork from an event and opening the fork; and the page opened
 * straight at `/debug/agents/:id` on a server without auth, following a
 * turn to its end; the page opened before the agent's first task (a "no
 * turns yet" card, `data-testid="no-turns"`, then the first turn followed
 * live once a task arrives); the work shown (the verdicts panel per turn and timeline
 * rows that lead with the meaning), a statechart whose edge labels do not
 * overlap in the rendered SVG, a chart card no taller than its content,
 * `/favicon.ico` served (no 404 while the page loads), the head's definition
 * (`front → invoicer` after a handoff), and live model text:
 * `event: delta` SSE frames injected into the page's events stream (the
 * browser's request is answered by the test) appear as a streaming message
 * that the stored step events replace; an `activity` in the agent view (the
 * test adds one to the server's answer) shows in the head. The page's hooks are
 * `data-state`/`data-active` (chart nodes), `data-edge-label` (chart edge
 * labels), `data-event-id`/`data-event-type` (timeline items),
 * `data-tool-call-id` (pending-call forms), `data-verdict-turn` /
 * `data-verdict-id` / `data-verdict-status` (verdicts) and `data-streaming`
 * (the live message).
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

const activeState = (page: Page) => page.locator('svg.chart [data-active="true"]').getAttribute("data-state");

/** Waits until the chart's active state is `state` and checks the API agrees. */
async function expectLive(page: Page, agentId: string, state: string) {
  await page.locator(`svg.chart [data-state="${state}"][data-active="true"]`).waitFor({ timeout: 15_000 });
  expect(await page.locator('svg.chart [data-active="true"]').count()).toBe(1);
  const api = await server.call("GET", `/v1/agents/${agentId}`);
  expect(api.body.state).toBe(await activeState(page));
}

describe("debugger page (Chromium)", () => {
  it("serves the shell and assets without a token, the data only with one, and loads nothing from elsewhere", async () => {
    for (const path of ["/debug", "/debug/agents/a1", "/debug/app.js", "/debug/app.css"]) {
      const res = await fetch(`${server.base}${path}`);
      expect(res.status, path).toBe(200);
      await res.arrayBuffer();
    }
    const shell = await fetch(`${server.base}/debug`);
    expect(shell.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await shell.text()).not.toMatch(/https?:\/\//);
    expect((await fetch(`${server.base}/v1/agents`)).status).toBe(401);
  });

  it("follows a turn live, travels back in time, forks from an event and delivers a tool result from the page", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const foreign: string[] = [];
    const urls: string[] = [];
    page.on("request", (r) => {
      urls.push(r.url());
      if (!r.url().startsWith(server.base)) foreign.push(r.url());
    });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));

    // The token is asked for once, then the list loads.
    await page.goto(`${server.base}/debug`);
    await page.locator('[data-testid="token-form"] input').fill(TOKEN);
    await page.locator('[data-testid="token-form"] button').click();
    await page.locator("table.agents").waitFor();

    // Start a turn: the agent appears in the list (search included) and links to its page.
    expect((await server.call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "Fix the login bug" })).status).toBe(202);
    await page.locator('[data-testid="agent-search"]').fill("a1");
    await page.locator('tr[data-agent-id="a1"] a').click({ timeout: 15_000 });
    expect(new URL(page.url()).pathname).toBe("/debug/agents/a1");

    // Live: running while the first model step is held (the claim stored the
    // turn's state, store/port.ts invariant `turn-start`), then waiting-tools.
    await expectLive(page, "a1", "running");
    server.release("a1");
    await expectLive(page, "a1", "waiting-tools");
    await page.locator('[data-event-type="tool_call"]').first().waitFor();

    // Time travel: the transition into running rides with the first step's commit (the turn's start is
    // stored with it), so the page shows the end of that commit, waiting-tools, and says so.
    const events = (await server.call("GET", "/v1/agents/a1/events?format=json")).body.events as any[];
    const toRunning = events.find((e) => e.type === "transition" && e.data.to === "running");
    const toWaiting = events.find((e) => e.type === "transition" && e.data.to === "waiting-tools");
    expect(toRunning && toWaiting).toBeTruthy();
    await page.locator(`[data-event-id="${toRunning.id}"]`).click();
    await page.locator('svg.chart [data-state="waiting-tools"][data-active="true"]').waitFor();
    await page.locator('[data-testid="history-state"]', { hasText: "waiting-tools" }).waitFor();
    expect(Number(await page.locator('[data-testid="commit-point"]').getAttribute("data-through-event-id"))).toBeGreaterThanOrEqual(toWaiting.id);
    // One step forward with the button, then one back with the other.
    await page.locator('[data-testid="step-forward"]').click();
    await page.locator('[data-testid="mode"]', { hasText: `at event #${toRunning.id + 1}` }).waitFor();
    await page.locator('[data-testid="step-back"]').click();
    await page.locator('[data-testid="mode"]', { hasText: `at event #${toRunning.id}` }).waitFor();
    expect(await activeState(page)).toBe("waiting-tools");
    // The slider moves too.
    await page.locator('[data-testid="slider"]').fill(String(toWaiting.id));
    await page.locator('svg.chart [data-state="waiting-tools"][data-active="true"]').waitFor();
    await page.locator('[data-testid="go-live"]').click();
    await expectLive(page, "a1", "waiting-tools");

    // The tool_call row is logged ahead of the transition that records the call: the page shows (and
    // would fork) the end of that commit, where the call is pending, and says so.
    const toolCall = events.find((e) => e.type === "tool_call");
    await page.locator(`[data-event-id="${toolCall.id}"]`).click();
    const point = page.locator('[data-testid="commit-point"]');
    await point.waitFor();
    expect(Number(await point.getAttribute("data-through-event-id"))).toBeGreaterThanOrEqual(toWaiting.id);
    await page.locator('[data-testid="history-state"]', { hasText: "waiting-tools" }).waitFor();
    await page.locator("form.fork h3", { hasText: "the end of its commit" }).waitFor();

    // Fork from the event that entered waiting-tools, and open the fork.
    await page.locator(`[data-event-id="${toWaiting.id}"]`).click();
    await page.locator('form.fork input[name="newAgentId"]').fill("a1-fork");
    await page.locator('[data-testid="fork"]').click();
    await page.locator('[data-testid="fork-link"]').click();
    expect(new URL(page.url()).pathname).toBe("/debug/agents/a1-fork");
    await expectLive(page, "a1-fork", "waiting-tools");
    const forkCall = (await server.call("GET", "/v1/agents/a1-fork")).body.pendingToolCalls[0];
    await page.locator(`form[data-tool-call-id="${forkCall.toolCallId}"]`).waitFor();
    await page.locator('[data-event-type="forked_from"]').waitFor();

    // Back to the source: deliver the pending result from its form; the turn ends done.
    await page.goBack();
    expect(new URL(page.url()).pathname).toBe("/debug/agents/a1");
    await expectLive(page, "a1", "waiting-tools");
    const call = (await server.call("GET", "/v1/agents/a1")).body.pendingToolCalls[0];
    const form = page.locator(`form[data-tool-call-id="${call.toolCallId}"]`);
    await form.locator("textarea").fill('{"answer":"yes"}');
    await form.locator('button[type="submit"]').click();
    await expectLive(page, "a1", "done");
    const after = (await server.call("GET", "/v1/agents/a1")).body;
    expect(after.output).toContain("yes");
    await page.locator('[data-event-type="tool_result_received"], [data-event-type="tool_result"]').first().waitFor();
    // The source is untouched by the fork except its forked_to event; the fork still waits.
    expect((await server.call("GET", "/v1/agents/a1-fork")).body.state).toBe("waiting-tools");

    // Nothing left the origin, and the token never entered a URL.
    expect(foreign).toEqual([]);
    expect(urls.filter((u) => u.includes(TOKEN))).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it("approves and rejects a call that needs approval from the pending-calls panel (POST …/approvals)", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${server.base}/debug`);
    await page.locator('[data-testid="token-form"] input').fill(TOKEN);
    await page.locator('[data-testid="token-form"] button').click();
    await page.locator("table.agents").waitFor();
    for (const [agentId, button] of [["pay-yes", "approve"], ["pay-no", "reject"]] as const) {
      expect((await server.call("POST", `/v1/agents/${agentId}/tasks`, { agent: "payer", input: "Pay 40" })).status).toBe(202);
      await page.goto(`${server.base}/debug/agents/${agentId}`);
      await expectLive(page, agentId, "waiting-tools");
      const call = (await server.call("GET", `/v1/agents/${agentId}`)).body.pendingToolCalls[0];
      expect(call.approval).toBe("pending");
      const panel = page.locator(`[data-approval-for="${call.toolCallId}"]`);
      await panel.waitFor();
      if (button === "reject") await panel.locator('input[name="reason"]').fill("not this month");
      else await page.screenshot({ path: "/tmp/debug-approval.png" });
      await panel.locator(`[data-testid="${button}"]`).click();
      await expectLive(page, agentId, "done");
      const after = (await server.call("GET", `/v1/agents/${agentId}`)).body;
      if (button === "approve") expect(after.output).toContain("40");
      else expect(after.output).toMatch(/approval_rejected.*not this month/);
      await page.locator('[data-event-type="approval_decided"]').first().waitFor();
    }
    // Approved ran once; rejected never ran.
    expect(server.payments()).toEqual([40]);
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it("opened straight at /debug/agents/:id on a server without auth, data-active follows GET /v1/agents/:id to the turn's end", async () => {
    const open = await startDebugServer({ auth: false });
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    try {
      expect((await open.call("POST", "/v1/agents/b1/tasks", { agent: "helper", input: "Check the build" })).status).toBe(202);
      await page.goto(`${open.base}/debug/agents/b1`);
      const live = async (state: string) => {
        await page.locator(`svg.chart [data-state="${state}"][data-active="true"]`).waitFor({ timeout: 15_000 });
        expect(await page.locator('svg.chart [data-active="true"]').count()).toBe(1);
        expect((await open.call("GET", "/v1/agents/b1")).body.state).toBe(
          await page.locator('svg.chart [data-active="true"]').getAttribute("data-state"),
        );
      };
      // The first model step is held: the turn is claimed, and its claim stored the state `running`.
      await live("running");
      open.release("b1");
      await live("waiting-tools");
      const call = (await open.call("GET", "/v1/agents/b1")).body.pendingToolCalls[0];
      const turnId = (await open.call("GET", "/v1/agents/b1")).body.activeTurnId;
      expect((await open.call("POST", "/v1/agents/b1/tool-results", {
        turnId, toolCallId: call.toolCallId, outcome: { ok: true, value: { answer: "no" } },
      })).status).toBe(200);
      await live("done");
      expect(await page.locator('[data-testid="token-form"]').count()).toBe(0);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
      await open.close();
    }
  }, 60_000);

  it("opened before the agent's first task: says there are no turns yet, then picks up the first turn live to its end", async () => {
    const open = await startDebugServer({ auth: false });
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    try {
      expect((await open.call("GET", "/v1/agents/fresh1")).status).toBe(404);
      await page.goto(`${open.base}/debug/agents/fresh1`);
      const empty = page.locator('[data-testid="no-turns"]');
      await empty.waitFor({ timeout: 15_000 });
      expect(await empty.textContent()).toMatch(/no turns yet/i);
      expect(await page.getByText("Loading…").count()).toBe(0);
      await page.screenshot({ path: "/tmp/debug-no-turns.png" });

      expect((await open.call("POST", "/v1/agents/fresh1/tasks", { agent: "helper", input: "First task" })).status).toBe(202);
      const live = (state: string) => page.locator(`svg.chart [data-state="${state}"][data-active="true"]`).waitFor({ timeout: 15_000 });
      await live("running");
      expect(await empty.count()).toBe(0);
      open.release("fresh1");
      await live("waiting-tools");
      const view = (await open.call("GET", "/v1/agents/fresh1")).body;
      expect((await open.call("POST", "/v1/agents/fresh1/tool-results", {
        turnId: view.activeTurnId, toolCallId: view.pendingToolCalls[0].toolCallId, outcome: { ok: true, value: "yes" },
      })).status).toBe(200);
      await live("done");
      // The timeline holds the turn's stored events from the first (task_enqueued) on, followed live.
      const lastId = (await open.call("GET", "/v1/agents/fresh1/events?format=json&limit=500")).body.events.at(-1).id;
      await page.locator(`.timeline li[data-event-id="${lastId}"]`).waitFor({ timeout: 15_000 });
      expect(await page.locator('.timeline li[data-event-id="1"]').getAttribute("data-event-type")).toBe("task_enqueued");
      await page.screenshot({ path: "/tmp/debug-first-turn.png" });
      expect(errors).toEqual([]);
    } finally {
      await page.close();
      await open.close();
    }
  }, 60_000);

  it("shows the work: verdicts per turn, timeline rows meaning first, labels that do not overlap, a chart card as tall as its content, an icon", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    const missing: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("response", (r) => {
      if (r.status() === 404) missing.push(r.url());
    });
    try {
      // The icon: served without a token, an ICO.
      const ico = await fetch(`${server.base}/favicon.ico`);
      expect(ico.status).toBe(200);
      expect(ico.headers.get("content-type")).toBe("image/x-icon");
      expect([...new Uint8Array(await ico.arrayBuffer()).slice(0, 4)]).toEqual([0, 0, 1, 0]);

      expect((await server.call("POST", "/v1/agents/inv1/tasks", { agent: "invoicer", input: "Bill 3 units" })).status).toBe(202);
      await page.goto(`${server.base}/debug`);
      await page.locator('[data-testid="token-form"] input').fill(TOKEN);
      await page.locator('[data-testid="token-form"] button').click();
      await page.goto(`${server.base}/debug/agents/inv1`);
      await page.locator('svg.chart [data-state="done"][data-active="true"]').waitFor({ timeout: 20_000 });

      // Verdicts: one turn, NEEDS_CHANGES (attempt 1 of 3) then PASS, as the API has them.
      const api = (await server.call("GET", "/v1/agents/inv1/verdicts")).body.verdicts as any[];
      expect(api.map((v) => v.status)).toEqual(["NEEDS_CHANGES", "PASS"]);
      const turn = page.locator(`[data-verdict-turn="${api[0].taskId}"]`);
      await turn.locator("[data-verdict-id]").nth(1).waitFor({ timeout: 15_000 });
      expect(await turn.locator("[data-verdict-id]").evaluateAll((els) => els.map((e) => e.getAttribute("data-verdict-status"))))
        .toEqual(["NEEDS_CHANGES", "PASS"]);
      const rejected = turn.locator(`[data-verdict-id="${api[0].verdictId}"]`);
      const rejectedText = await rejected.innerText();
      for (const part of ["NEEDS_CHANGES", "units must be positive", "attempt 1 of 3", "bad_units", "Revise the output", "output_verifier:invoicer"]) {
        expect(rejectedText).toContain(part);
      }
      expect(await turn.locator(`[data-verdict-id="${api[1].verdictId}"]`).innerText()).toContain("attempt 2 of 3");

      // Timeline rows lead with the meaning.
      const verdictRow = page.locator('[data-event-type="verdict_recorded"] .esum').first();
      expect(await verdictRow.innerText()).toMatch(/^NEEDS_CHANGES: units must be positive/);
      expect(await page.locator('[data-event-type="tool_call"] .esum').first().innerText()).toMatch(/^agent_output\(units: -2\)/);

      // Edge labels: many, drawn, and no two label boxes intersect.
      const boxes = await page.locator("svg.chart [data-edge-label]").evaluateAll((els) =>
        els.map((e) => {
          const b = (e as SVGGraphicsElement).getBBox();
          return { id: e.getAttribute("data-edge-label"), x: b.x, y: b.y, w: b.width, h: b.height };
        })
      );
      expect(boxes.length).toBeGreaterThan(10);
      for (const b of boxes) expect(b.w * b.h, b.id!).toBeGreaterThan(0);
      const overlaps: string[] = [];
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const a = boxes[i], b = boxes[j];
          if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h) overlaps.push(`${a.id} / ${b.id}`);
        }
      }
      expect(overlaps).toEqual([]);

      // The chart card ends right below its content (the time-travel bar
      // under the chart), and the chart is as tall as its drawing.
      const fit = await page.locator("svg.chart").evaluate((svg) => {
        const card = svg.closest(".card")!;
        const travel = card.querySelector(".travel")!;
        const drawn = (svg as SVGSVGElement).getBBox();
        const box = svg.getBoundingClientRect();
        const scale = box.width / (svg as SVGSVGElement).viewBox.baseVal.width;
        return { below: card.getBoundingClientRect().bottom - travel.getBoundingClientRect().bottom, svg: box.height, drawn: drawn.height * scale };
      });
      expect(fit.below).toBeLessThanOrEqual(20);
      expect(fit.svg).toBeLessThanOrEqual(fit.drawn + 30);

      // A turn a handoff transferred: the head names both definitions, the timeline the handoff.
      expect(await page.locator('[data-testid="definition"]').innerText()).toBe("invoicer");
      expect((await server.call("POST", "/v1/agents/front1/tasks", { agent: "front", input: "Bill 3 units" })).status).toBe(202);
      await page.goto(`${server.base}/debug/agents/front1`);
      await page.locator('svg.chart [data-state="done"][data-active="true"]').waitFor({ timeout: 20_000 });
      await page.locator('[data-testid="definition"]', { hasText: "front → invoicer" }).waitFor({ timeout: 15_000 });
      expect(await page.locator('[data-event-type="handoff"] .esum').first().innerText()).toMatch(/^handed off: front → invoicer/);

      expect(missing).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  }, 90_000);

  it("appends `event: delta` text to a streaming message and drops it when the step's stored events arrive; shows `activity`", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    try {
      expect((await server.call("POST", "/v1/agents/s1/tasks", { agent: "helper", input: "Stream it" })).status).toBe(202);
      const turnId = (await server.call("GET", "/v1/agents/s1")).body.activeTurnId as string;
      expect(turnId).toBeTruthy();
      // The page's first request of the events stream is answered here with
      // delta frames (the shape the SSE route sends: `event: delta`, no id);
      // the stream then ends and the page reconnects to the real route.
      let injected = 0;
      await page.route(/\/v1\/agents\/s1\/events\?format=sse/, async (route) => {
        if (injected++ > 0) return route.continue();
        const frames = ["Let me ", "ask ", "a human."].map((text) =>
          `event: delta\ndata: ${JSON.stringify({ turnId, step: 1, text })}\n\n`
        ).join("");
        await route.fulfill({ status: 200, headers: { "content-type": "text/event-stream" }, body: `: hello\n\n${frames}` });
      });
      // The agent view gains `activity` (what the agent is doing now) where
      // the server reports it; the page shows it in the head.
      const since = Date.now();
      await page.route(/\/v1\/agents\/s1$/, async (route) => {
        const res = await route.fetch();
        const body = await res.json();
        await route.fulfill({ response: res, json: { ...body, activity: { kind: "model", step: 1, since } } });
      });
      await page.goto(`${server.base}/debug`);
      await page.locator('[data-testid="token-form"] input').fill(TOKEN);
      await page.locator('[data-testid="token-form"] button').click();
      await page.goto(`${server.base}/debug/agents/s1`);
      expect(await page.locator('[data-testid="activity"]').innerText({ timeout: 15_000 })).toMatch(/^model · step 1 · \d+s$/);
      const live = page.locator('[data-streaming="true"]');
      await live.waitFor({ timeout: 15_000 });
      expect(await live.locator("pre").innerText()).toBe("Let me ask a human.");
      expect(await live.getAttribute("data-step")).toBe("1");
      // The step is stored: its chunk/step events reach the page and the streaming message goes.
      server.release("s1");
      await page.locator('svg.chart [data-state="waiting-tools"][data-active="true"]').waitFor({ timeout: 15_000 });
      await live.waitFor({ state: "detached", timeout: 15_000 });
      expect(injected).toBeGreaterThan(1);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  }, 60_000);
  it("shows the running turn's concurrency key and priority, and why the next queued task waits", async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(`${server.base}/debug`);
    await page.locator('[data-testid="token-form"] input').fill(TOKEN);
    await page.locator('[data-testid="token-form"] button').click();
    await page.locator("table.agents").waitFor();
    // The helper's first step waits at its gate, so the first turn runs while the second waits behind it.
    expect((await server.call("POST", "/v1/agents/lane1/tasks", { agent: "helper", input: "first", concurrencyKey: "tenant:acme", priority: 9 })).status).toBe(202);
    expect((await server.call("POST", "/v1/agents/lane1/tasks", { agent: "helper", input: "second", concurrencyKey: "tenant:beta" })).status).toBe(202);
    await page.goto(`${server.base}/debug/agents/lane1`);
    await expectLive(page, "lane1", "running");
    await expect.poll(() => page.locator('[data-testid="turn-lane"]').textContent(), { timeout: 15_000 }).toBe("key tenant:acme · priority 9");
    const queued = page.locator('[data-testid="queued"]');
    await expect.poll(() => queued.textContent(), { timeout: 15_000 }).toMatch(/next behind 1 turn of this agent/);
    expect(await queued.textContent()).toMatch(/key tenant:beta/);
    await page.screenshot({ path: "/tmp/debug-lanes.png" });
    server.release("lane1");
    expect(errors).toEqual([]);
    await page.close();
  });
});
