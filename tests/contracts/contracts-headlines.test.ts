/**
 * The headlines acceptance sequence (docs/contracts.md, "The headlines
 * sequence, before and after"), offline: the "headlines" agent of
 * examples/headlines.ts reads three news pages (fixtures under
 * tests/fixtures/news/, served over HTTP by a local server here) with its
 * contracted `web_fetcher` and `parser`, driven by the example's scripted
 * model through the HTTP routes on the memory store. Its original failures
 * replay, one per page:
 *
 * 1. Google News: the fetcher answers `Body` where `body` is required —
 *    passes by tolerance, the payload keeps its spelling.
 * 2. Yahoo News: the first request fails (503) and the fetcher answers
 *    `{ status }` alone — a typed `contract_violation` reaches the model,
 *    which repairs by fetching again.
 * 3. NYT, through the drifted method `fetch`: the model calls the parser with
 *    `null` next to the fetch — `invalid_input`, not an empty list — and
 *    `fetch` next to `fetch_url` on role `web_fetcher` raises
 *    `interface_overlap` and a hint in the next system message.
 *
 * The same sequence without contracts (the "before") ends with empty
 * headlines twice and no overlap signal. Both traces are the ones printed in
 * docs/contracts.md (checked here, so the document cannot drift).
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createGatehouse, type Gatehouse, type ModelRequest, type StoredEvent } from "../../mod.ts";
import { type HeadlinesTask, headlinesAgent, headlinesModel } from "../../examples/headlines.ts";

const fixture = (f: string) => readFileSync(new URL(`../fixtures/news/${f}`, import.meta.url), "utf8");
const PAGES: Record<string, string> = { "/google": fixture("google-news.html"), "/yahoo": fixture("yahoo-news.html"), "/nyt": fixture("nyt.html") };

let server: Server;
let base = "";
/** Requests per path; the first request of /yahoo answers 503. */
const hits = new Map<string, number>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? "/";
    const n = (hits.get(path) ?? 0) + 1;
    hits.set(path, n);
    const page = PAGES[path];
    if (!page) return void res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    if (path === "/yahoo" && n === 1) return void res.writeHead(503, { "content-type": "text/plain" }).end("busy");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

const tasks = (): HeadlinesTask[] => [
  { site: "google", url: `${base}/google` },
  { site: "yahoo", url: `${base}/yahoo` },
  { site: "nyt", url: `${base}/nyt`, method: "fetch", eagerParse: true },
];

/** One line per tool result, overlap signal and task end: what docs/contracts.md prints. */
export function traceLines(events: StoredEvent[]): string[] {
  const out: string[] = [];
  for (const e of events) {
    const d = e.data as Record<string, any>;
    if (e.type === "tool_result") {
      const o = d.outcome;
      if (o.ok) {
        const items = Array.isArray(o.value) ? ` (${o.value.length} items)` : ` (keys: ${Object.keys(o.value ?? {}).join(", ")})`;
        const cv = d.contractValidation;
        const contract = !cv.applied ? "" : cv.tolerated ? `, contract passed: ${cv.tolerated.map((t: any) => `"${t.expected}" found as "${t.found}"`).join(", ")}` : ", contract passed";
        out.push(`${d.name} -> ok${items}${contract}`);
      } else {
        const m = o.error.metadata ?? {};
        out.push(`${d.name} -> error ${o.error.type}${m.mismatch ? ` (${m.mismatch}${m.expectedKeys ? `: expected ${m.expectedKeys.join(", ")}, found ${m.actualKeys.join(", ") || "nothing"}` : ""})` : ""}`);
      }
    } else if (e.type === "interface_overlap") {
      out.push(`interface_overlap on ${d.role}: ${d.overlaps.map((o: any) => o.methods.join(" / ")).join("; ")}`);
    } else if (e.type === "task") {
      const r = d.deliverable as { site: string; headlines?: unknown[] };
      out.push(`${d.status}: ${r.site}, ${r.headlines?.length ?? 0} headlines`);
    }
  }
  return out;
}

async function runSequence(contracts: boolean) {
  hits.clear();
  const requests: ModelRequest[] = [];
  const inner = headlinesModel();
  const model = { name: inner.name, generate: (req: ModelRequest) => (requests.push(req), inner.generate(req)) };
  const gh: Gatehouse = createGatehouse({ agents: [headlinesAgent({ contracts, model })] });
  const traces: string[][] = [];
  try {
    for (const task of tasks()) {
      const res = await gh.app.request("/v1/agents/news/tasks", {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "headlines", input: task }),
      });
      expect(res.status).toBe(202);
      const { turnId } = await res.json() as { turnId: string };
      await gh.drain();
      traces.push(traceLines((await gh.store.readEvents("news", 0, 10_000)).filter((e) => e.turnId === turnId)));
    }
    const events = await gh.store.readEvents("news", 0, 10_000);
    const tools = await (await gh.app.request("/v1/tools")).json() as { tools: Array<Record<string, unknown>> };
    return { traces, events, requests, tools: tools.tools, gh };
  } finally {
    await gh.close();
  }
}

/** The fenced block after `<!-- trace:<name> -->` in docs/contracts.md. */
function documentedTrace(name: string): string {
  const doc = readFileSync(new URL("../../docs/contracts.md", import.meta.url), "utf8");
  const m = doc.match(new RegExp(`<!-- trace:${name} -->\\n\`\`\`text\\n([\\s\\S]*?)\\n\`\`\``));
  if (!m) throw new Error(`docs/contracts.md has no trace:${name} block`);
  return m[1];
}

const render = (traces: string[][]) =>
  traces.map((t, i) => [`# ${tasks()[i].site} (${tasks()[i].method ?? "fetch_url"})`, ...t].join("\n")).join("\n");

describe("the headlines sequence with contracts (after)", () => {
  let run: Awaited<ReturnType<typeof runSequence>>;
  beforeAll(async () => {
    run = await runSequence(true);
  });

  it("google: Body satisfies the required body by tolerance, and the model gets the page as the fetcher spelt it", () => {
    expect(run.traces[0]).toEqual([
      `fetch_url -> ok (keys: status, Body), contract passed: "body" found as "Body"`,
      "parse -> ok (3 items), contract passed",
      "done: google, 3 headlines",
    ]);
    const toolMsg = run.requests[1].messages.find((m) => m.role === "tool")!;
    expect(JSON.parse(toolMsg.content)).toMatchObject({ status: 200, Body: expect.stringContaining("Harbour bridge") });
  });

  it("yahoo: { status } without a body reaches the model as a typed contract_violation, and the model repairs", () => {
    expect(run.traces[1]).toEqual([
      "fetch_url -> error contract_violation (missing_required_key: expected body, found status)",
      `fetch_url -> ok (keys: status, Body), contract passed: "body" found as "Body"`,
      "parse -> ok (4 items), contract passed",
      "done: yahoo, 4 headlines",
    ]);
    expect(hits.get("/yahoo")).toBe(2);
    // What the model read after the refused fetch: the typed error with its metadata.
    const afterViolation = run.requests.find((r) => r.messages.at(-1)?.content.includes("contract_violation"))!;
    expect(JSON.parse(afterViolation.messages.at(-1)!.content)).toEqual({
      error: {
        type: "contract_violation",
        message: 'Cannot accept the result of tool "fetch_url": required key "body" is missing (in any spelling); keys found: status',
        retryable: false,
        metadata: {
          expectedShape: "object", actualShape: "object", expectedKeys: ["body"], actualKeys: ["status"],
          mismatch: "missing_required_key", tool: "web_fetcher", method: "fetch_url",
          detail: 'required key "body" is missing (in any spelling)',
        },
      },
    });
  });

  it("nyt: the parser given null answers invalid_input (not an empty list); fetch next to fetch_url raises the overlap", () => {
    expect(run.traces[2]).toEqual([
      `fetch -> ok (keys: status, Body), contract passed: "body" found as "Body"`,
      "parse -> error invalid_input (nil_required_input)",
      "interface_overlap on web_fetcher: fetch_url / fetch",
      "parse -> ok (3 items), contract passed",
      "done: nyt, 3 headlines",
    ]);
  });

  it("the overlap hint appears in the system message only after the drift, and the known tools list methods", () => {
    const systems = run.requests.map((r) => r.messages[0].content);
    const firstHint = systems.findIndex((s) => s.includes("<interface_overlap"));
    // Every request before the nyt fetch succeeded has no hint; every one after has it.
    const nytStart = run.requests.findIndex((r) => r.messages.some((m) => m.role === "user" && m.content.includes("/nyt")));
    expect(firstHint).toBe(nytStart + 1);
    expect(systems.slice(0, firstHint).every((s) => !s.includes("interface_overlap"))).toBe(true);
    expect(systems[firstHint]).toContain('<interface_overlap role="web_fetcher">"fetch_url" and "fetch" look like one capability');
    expect(systems[firstHint]).toContain("- web_fetcher: methods fetch_url, fetch");
    expect(systems[firstHint]).toContain("- parser: methods parse");
    // The very first request knows no tools yet: the instructions alone.
    expect(systems[0]).toBe("Collect the headlines of the page the task names. Fetch it, parse it, submit { site, headlines }.");
    // Nothing was renamed: both methods stay, and the registry shows them.
    expect(run.tools.find((t) => t.role === "web_fetcher")).toMatchObject({
      methods: ["fetch_url", "fetch"], aliases: [], overlaps: [{ methods: ["fetch_url", "fetch"], kind: "prefix" }],
    });
    expect(run.tools.find((t) => t.role === "parser")).toMatchObject({ methods: ["parse"], overlaps: [] });
  });

  it("every tool_result event carries contractValidation; exactly one interface_overlap event", () => {
    const results = run.events.filter((e) => e.type === "tool_result");
    expect(results.length).toBe(8);
    for (const e of results) expect(Object.keys(e.data.contractValidation as object)).toEqual(expect.arrayContaining(["applied", "passed", "mismatch", "expectedKeys", "actualKeys"]));
    expect(run.events.filter((e) => e.type === "interface_overlap")).toHaveLength(1);
  });

  it("matches the after trace printed in docs/contracts.md", () => {
    expect(render(run.traces)).toBe(documentedTrace("after"));
  });
});

describe("the same sequence without contracts (before)", () => {
  it("crosses the boundaries silently: empty headlines from { status } and from parse(null), no overlap signal", async () => {
    const run = await runSequence(false);
    expect(run.traces[1]).toContain("parse -> ok (0 items)");
    expect(run.traces[1].at(-1)).toBe("done: yahoo, 0 headlines");
    expect(run.traces[2].at(-1)).toBe("done: nyt, 0 headlines");
    expect(run.events.filter((e) => e.type === "interface_overlap")).toEqual([]);
    expect(run.requests.every((r) => r.messages[0].content === "Collect the headlines of the page the task names. Fetch it, parse it, submit { site, headlines }.")).toBe(true);
    expect(render(run.traces)).toBe(documentedTrace("before"));
  });
});
