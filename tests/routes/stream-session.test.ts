/**
 * Stream sessions (routes/auth/stream-session.ts): an `EventSource`-like
 * client, which sends no custom header (only `Accept: text/event-stream`,
 * `Last-Event-ID` on reconnect and the cookies a browser holds for the
 * URL), reads an agent's event stream after `POST .../events/session` with
 * a bearer token; the cookie opens nothing else, expires, dies with its
 * token, and neither the token nor the session appears in a URL or a log.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import { STREAM_SESSION_MS } from "../../routes/auth/stream-session.ts";
import { manualClock } from "../helpers/clock.ts";

const ADMIN = "admin-token-0123456789abcdef";
const ACME = "acme-reader-0123456789abcdef";
const ACME_WRITER = "acme-writer-0123456789abcdef";
const agent = defineAgent({ name: "helper", instructions: "x", model: scriptedModel([{ text: "ok" }]) });

/** A cookie jar as a browser keeps it: name, value and Path; sent on requests whose path the Path covers. */
class Jar {
  cookies: Array<{ name: string; value: string; path: string; attrs: string }> = [];
  take(res: Response) {
    const h = res.headers.get("set-cookie");
    if (!h) return;
    const [pair, ...attrs] = h.split(";").map((s) => s.trim());
    const eq = pair.indexOf("=");
    const path = attrs.find((a) => a.toLowerCase().startsWith("path="))?.slice(5) ?? "/";
    this.cookies = this.cookies.filter((c) => !(c.name === pair.slice(0, eq) && c.path === path));
    this.cookies.push({ name: pair.slice(0, eq), value: pair.slice(eq + 1), path, attrs: attrs.join("; ") });
  }
  header(url: string): string | undefined {
    const p = new URL(url).pathname;
    const hits = this.cookies.filter((c) => p === c.path || p.startsWith(c.path.endsWith("/") ? c.path : `${c.path}/`));
    return hits.length ? hits.map((c) => `${c.name}=${c.value}`).join("; ") : undefined;
  }
}

function world(store: Store = memoryStore(), tokens: Array<string | { token: string; tenants: string[]; verbs: Array<"read" | "enqueue"> }> = [
  ADMIN, { token: ACME, tenants: ["acme-"], verbs: ["read"] }, { token: ACME_WRITER, tenants: ["acme-"], verbs: ["enqueue"] },
]) {
  const clock = manualClock();
  const logs: string[] = [];
  const log = (level: string) => (msg: string, fields?: unknown) => void logs.push(`${level} ${msg} ${JSON.stringify(fields ?? {})}`);
  const urls: string[] = [];
  const gh = createGatehouse({
    agents: [agent], store, clock, rateLimits: false, auth: { tokens },
    logger: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") },
  });
  const jar = new Jar();
  const seeded = store.enqueueTask({ agentId: "acme-1", agentName: "helper", workerTarget: "default", input: "x", options: {}, turnId: `t_${Math.random()}`, now: clock.now() })
    .catch(() => {});
  /** What a browser sends: the headers the caller names (fetch with Authorization) plus the jar's cookies for the URL. */
  const browser = async (method: string, path: string, headers: Record<string, string> = {}, body?: string) => {
    await seeded;
    const url = `http://gh.test${path}`;
    urls.push(url);
    const cookie = jar.header(url);
    const res = await gh.fetch(new Request(url, { method, headers: { ...headers, ...(cookie ? { cookie } : {}) }, body }));
    jar.take(res);
    return res;
  };
  /** EventSource: GET with Accept: text/event-stream (and Last-Event-ID on reconnect), nothing else; reads frames until `want` events. */
  const eventSource = async (path: string, want: number, lastEventId?: string) => {
    const ac = new AbortController();
    const url = `http://gh.test${path}`;
    urls.push(url);
    const cookie = jar.header(url);
    const res = await gh.fetch(new Request(url, {
      headers: { accept: "text/event-stream", ...(lastEventId ? { "last-event-id": lastEventId } : {}), ...(cookie ? { cookie } : {}) },
      signal: ac.signal,
    }));
    const ids: string[] = [];
    if (res.status === 200) {
      const reader = res.body!.getReader();
      let buf = "";
      while (ids.length < want) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += new TextDecoder().decode(value);
        for (const m of buf.matchAll(/^id: (\d+)$/gm)) if (!ids.includes(m[1])) ids.push(m[1]);
      }
      ac.abort();
      await reader.cancel().catch(() => {});
    }
    return { status: res.status, type: res.headers.get("content-type"), ids, res };
  };
  return { gh, clock, jar, browser, eventSource, logs, urls };
}

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

describe("stream sessions for EventSource", () => {
  it("a session minted with a bearer token opens the agent's SSE stream with no header but the cookie; reconnects work", async () => {
    const w = world();
    await w.gh.fetch(new Request("http://gh.test/v1/agents/acme-1/tasks", {
      method: "POST", headers: { ...bearer(ADMIN), "content-type": "application/json" }, body: JSON.stringify({ agent: "helper", input: "hi" }),
    }));
    await w.gh.drain();
    // Without a session: 401, as EventSource would see it.
    expect((await w.eventSource("/v1/agents/acme-1/events", 1)).status).toBe(401);
    const minted = await w.browser("POST", "/v1/agents/acme-1/events/session", bearer(ACME));
    expect(minted.status).toBe(200);
    expect(minted.headers.get("cache-control")).toBe("no-store");
    const body = await minted.json() as { expiresAt: number; path: string };
    expect(body).toEqual({ expiresAt: w.clock.now() + STREAM_SESSION_MS, path: "/v1/agents/acme-1/events" });
    expect(w.jar.cookies).toHaveLength(1);
    expect(w.jar.cookies[0]).toMatchObject({ name: "gh_stream", path: "/v1/agents/acme-1/events" });
    expect(w.jar.cookies[0].attrs).toBe("Path=/v1/agents/acme-1/events; Max-Age=300; HttpOnly; Secure; SameSite=Strict");
    const first = await w.eventSource("/v1/agents/acme-1/events", 2);
    expect(first.status).toBe(200);
    expect(first.type).toMatch(/^text\/event-stream/);
    expect(first.ids.slice(0, 2)).toEqual(["1", "2"]);
    // A reconnect with Last-Event-ID inside the session's life resumes after it.
    w.clock.advance(STREAM_SESSION_MS - 1);
    const again = await w.eventSource("/v1/agents/acme-1/events", 1, "2");
    expect(again.status).toBe(200);
    expect(again.ids[0]).toBe("3");
    // The JSON page of the same path is open to it too (same route, same verb).
    expect((await w.browser("GET", "/v1/agents/acme-1/events?format=json")).status).toBe(200);
    // Expired: 401 with a message that says what to do.
    w.clock.advance(1);
    const late = await w.eventSource("/v1/agents/acme-1/events", 1);
    expect(late.status).toBe(401);
    expect(await late.res.json()).toMatchObject({ code: "unauthorized", detail: expect.stringMatching(/events\/session/) });
    await w.gh.close();
  });

  it("the cookie opens nothing else: not another agent's stream, not the agent's state, not a write", async () => {
    const w = world();
    expect((await w.browser("POST", "/v1/agents/acme-1/events/session", bearer(ADMIN))).status).toBe(200);
    const value = w.jar.cookies[0].value;
    const withCookie = (method: string, path: string, extra: Record<string, string> = {}) =>
      w.gh.fetch(new Request(`http://gh.test${path}`, { method, headers: { cookie: `gh_stream=${value}`, ...extra }, body: method === "POST" ? "{}" : undefined }));
    // Another agent's path (a client that sends the cookie anyway): the MAC covers the agent id.
    expect((await withCookie("GET", "/v1/agents/acme-2/events")).status).toBe(401);
    expect((await withCookie("GET", "/v1/agents/acme-1")).status).toBe(401);
    expect((await withCookie("GET", "/v1/agents/acme-1/verdicts")).status).toBe(401);
    expect((await withCookie("POST", "/v1/agents/acme-1/tasks", { "content-type": "application/json" })).status).toBe(401);
    // A session does not mint sessions (none outlives 5 minutes without the token).
    expect((await withCookie("POST", "/v1/agents/acme-1/events/session")).status).toBe(401);
    // A tampered cookie, a forged expiry: 401.
    const [v, exp, sig] = value.split(".");
    expect((await w.gh.fetch(new Request("http://gh.test/v1/agents/acme-1/events?format=json", { headers: { cookie: `gh_stream=${v}.${Number(exp) + 1000}.${sig}` } }))).status).toBe(401);
    expect((await w.gh.fetch(new Request("http://gh.test/v1/agents/acme-1/events?format=json", { headers: { cookie: `gh_stream=${v}.${exp}.${sig.slice(0, -2)}AA` } }))).status).toBe(401);
    expect((await withCookie("GET", "/v1/agents/acme-1/events?format=json")).status).toBe(200);
    await w.gh.close();
  });

  it("scopes: minting needs read over the agent; a session dies with its token and keeps its tenants", async () => {
    const store = memoryStore();
    const w = world(store);
    expect((await w.browser("POST", "/v1/agents/globex-1/events/session", bearer(ACME))).status).toBe(403);
    expect((await w.browser("POST", "/v1/agents/acme-1/events/session", bearer(ACME_WRITER))).status).toBe(403);
    expect((await w.browser("POST", "/v1/agents/acme-1/events/session")).status).toBe(401);
    expect(w.jar.cookies).toHaveLength(0);
    expect((await w.browser("POST", "/v1/agents/acme-1/events/session", bearer(ACME))).status).toBe(200);
    const cookie = `gh_stream=${w.jar.cookies[0].value}`;
    // Another process with the same tokens accepts it (stateless) ...
    const same = world(store);
    expect((await same.gh.fetch(new Request("http://gh.test/v1/agents/acme-1/events?format=json", { headers: { cookie } }))).status).toBe(200);
    // ... one where the token was rotated out does not.
    const rotated = world(store, [ADMIN, { token: "acme-reader-rotated-0123456789", tenants: ["acme-"], verbs: ["read"] }]);
    expect((await rotated.gh.fetch(new Request("http://gh.test/v1/agents/acme-1/events?format=json", { headers: { cookie } }))).status).toBe(401);
    await w.gh.close();
  });

  it("no token and no session in any URL or log line", async () => {
    const w = world();
    await w.browser("POST", "/v1/agents/acme-1/events/session", bearer(ACME));
    const value = w.jar.cookies[0].value;
    await w.eventSource("/v1/agents/acme-1/events", 0);
    await w.eventSource("/v1/agents/acme-2/events", 0);
    await w.gh.fetch(new Request("http://gh.test/v1/agents/acme-1/events", { headers: { cookie: `gh_stream=${value.slice(0, -3)}xyz` } }));
    for (const line of [...w.urls, ...w.logs]) {
      for (const secret of [ACME, ADMIN, value, value.split(".")[2]]) expect(line).not.toContain(secret);
    }
    expect(w.urls.every((u) => !/token|session=|gh_stream/.test(new URL(u).search))).toBe(true);
    await w.gh.close();
  });

  it("without auth the route answers expiresAt null and sets no cookie", async () => {
    const gh = createGatehouse({ agents: [agent], store: memoryStore() });
    const res = await gh.fetch(new Request("http://gh.test/v1/agents/a1/events/session", { method: "POST" }));
    expect(res.status).toBe(200);
    expect(res.headers.get("set-cookie")).toBeNull();
    expect(await res.json()).toEqual({ expiresAt: null, path: "/v1/agents/a1/events" });
    await gh.close();
  });
});
