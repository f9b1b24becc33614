/**
 * The browser's own `EventSource` (headless Chromium) reads an agent's
 * event stream with a stream session: the page asks `POST
 * .../events/session` with its bearer token (fetch, same origin), cannot
 * read the HttpOnly cookie, and `new EventSource(path)` carries the cookie
 * and no other credential. The server sees no token in any URL and no
 * Authorization header on the stream request; without a session the
 * browser's EventSource fails (401) and closes.
 */
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import { launchChromium } from "../helpers/debug-page.ts";

const TOKEN = "browser-reader-token-0123456789";
const agent = defineAgent({ name: "helper", instructions: "x", model: scriptedModel([{ text: "ok" }]) });

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

describe("stream sessions in Chromium", () => {
  it("EventSource opens the stream with the session cookie only; without one it fails and closes", async () => {
    const store = memoryStore();
    const gh = createGatehouse({ agents: [agent], store, auth: { tokens: [{ token: TOKEN, tenants: ["acme-"], verbs: ["read"] }] } });
    await store.enqueueTask({ agentId: "acme-1", agentName: "helper", workerTarget: "default", input: "hi", options: {}, turnId: "t1", now: Date.now() });
    const seen: Array<{ method: string; url: string; authorization: string | null; cookie: string | null }> = [];
    const server = serve({
      fetch: (req: Request) => {
        seen.push({ method: req.method, url: req.url, authorization: req.headers.get("authorization"), cookie: req.headers.get("cookie") });
        return gh.fetch(req);
      },
      port: 0,
      hostname: "127.0.0.1",
    });
    await new Promise<void>((resolve) => server.once("listening", () => resolve()));
    // `localhost` is a secure context, so the browser keeps the Secure cookie over plain HTTP.
    const base = `http://localhost:${(server.address() as AddressInfo).port}`;
    const page = await browser.newPage();
    try {
      await page.goto(`${base}/healthz`);
      const result = await page.evaluate(async (token) => {
        const open = (path: string) =>
          new Promise<{ opened: boolean; type?: string; id?: string; readyState: number }>((resolve) => {
            const es = new EventSource(path);
            const done = (r: { opened: boolean; type?: string; id?: string }) => {
              const readyState = es.readyState;
              es.close();
              resolve({ ...r, readyState });
            };
            es.addEventListener("task_enqueued", (e) => done({ opened: true, type: e.type, id: (e as MessageEvent).lastEventId }));
            es.onerror = () => done({ opened: false });
          });
        const before = await open("/v1/agents/acme-1/events");
        const minted = await fetch("/v1/agents/acme-1/events/session", { method: "POST", headers: { authorization: `Bearer ${token}` } });
        const body = await minted.json();
        const after = await open("/v1/agents/acme-1/events");
        const other = await open("/v1/agents/acme-2/events");
        return { before, status: minted.status, body, visibleCookie: document.cookie, after, other };
      }, TOKEN);
      expect(result.before).toEqual({ opened: false, readyState: 2 });
      expect(result.status).toBe(200);
      expect(result.body.path).toBe("/v1/agents/acme-1/events");
      // HttpOnly: the page's scripts cannot read the session.
      expect(result.visibleCookie).toBe("");
      expect(result.after).toMatchObject({ opened: true, type: "task_enqueued", id: "1" });
      // The cookie's Path keeps it off another agent's stream.
      expect(result.other).toEqual({ opened: false, readyState: 2 });

      const streams = seen.filter((r) => r.method === "GET" && r.url.includes("/events"));
      expect(streams.length).toBeGreaterThanOrEqual(3);
      for (const r of streams) expect(r.authorization).toBeNull();
      expect(streams.filter((r) => r.url.endsWith("/acme-1/events") && r.cookie?.startsWith("gh_stream=v1.")).length).toBe(1);
      expect(streams.filter((r) => r.url.endsWith("/acme-2/events")).every((r) => r.cookie === null)).toBe(true);
      for (const r of seen) expect(r.url).not.toContain(TOKEN);
    } finally {
      await page.close();
      const closed = new Promise<void>((r) => server.close(() => r()));
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      await closed;
      await gh.close();
    }
  }, 60_000);
});
