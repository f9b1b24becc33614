/**
 * The contracts example (docs/contracts.md): a "headlines" agent that reads
 * news pages with a `web_fetcher` and a `parser`, both contracted tools.
 *
 * - The fetcher (`fetch_url`, and `fetch`, the same capability under a
 *   drifted method name) really fetches over HTTP and answers in its own
 *   spelling, `{ status, Body }`; on a status that is not 2xx it answers
 *   `{ status }` alone. Its deliverable requires `body`: `Body` satisfies it
 *   by tolerance, `{ status }` is a `contract_violation`.
 * - The parser requires `html`: `null` is `invalid_input`, not an empty list.
 *   Its deliverable is a list of `{ title, url }`.
 * - `headlinesModel()` is a scripted model that behaves like the model in
 *   the original traces: it retries a fetch the contract refused, sometimes
 *   calls the parser before it has the page, and uses the method a task
 *   names (`fetch_url` or `fetch`).
 *
 * `headlinesTools({ contracts: false })` are the same tools without roles,
 * deliverables or preconditions: the "before" of docs/contracts.md.
 */
import { z } from "zod";
import { defineAgent, defineTool, scriptedModel } from "../mod.ts";
import type { AnyAgent, AnyTool, Message, Model } from "../mod.ts";

export interface Headline {
  title: string;
  url: string;
}

/** Headlines of a page: the `<a href>` text inside each `h1`-`h4` (an empty list when there is none). */
export function parseHeadlines(html: string): Headline[] {
  const out: Headline[] = [];
  for (const m of html.matchAll(/<h[1-4][^>]*>\s*<a\b[^>]*\bhref="([^"]+)"[^>]*>([^<]+)<\/a>\s*<\/h[1-4]>/gi)) {
    out.push({ title: m[2].trim(), url: m[1] });
  }
  return out;
}

/** The tools of the example; `contracts: false` drops roles, deliverables and preconditions. */
export function headlinesTools(opts: { contracts?: boolean } = {}): { fetchUrl: AnyTool; fetch: AnyTool; parse: AnyTool } {
  const contracts = opts.contracts ?? true;
  const fetcher = (name: string) =>
    defineTool({
      name,
      description: "Fetch a web page over HTTP; answers its status and body",
      parameters: z.object({ url: z.string() }),
      ...(contracts ? { role: "web_fetcher", deliverable: { type: "object" as const, required: ["body"] } } : {}),
      execute: async ({ url }, { signal }) => {
        const res = await fetch(url, { signal });
        const text = await res.text();
        return res.ok ? { status: res.status, Body: text } : { status: res.status };
      },
    });
  const parse = defineTool({
    name: "parse",
    description: "Extract the headlines of a page from its HTML",
    parameters: z.object({ html: z.string().nullable() }),
    ...(contracts ? { role: "parser", deliverable: { type: "array" as const, items: { required: ["title", "url"] } } } : {}),
    execute: ({ html }) => parseHeadlines(html ?? ""),
  });
  return { fetchUrl: fetcher("fetch_url"), fetch: fetcher("fetch"), parse };
}

/** A task of the example: which page, through which fetch method, and whether the model calls the parser too early. */
export interface HeadlinesTask {
  site: string;
  url: string;
  method?: "fetch_url" | "fetch";
  eagerParse?: boolean;
}

const parsed = (m: Message | undefined): unknown => {
  try {
    return m ? JSON.parse(m.content) : undefined;
  } catch {
    return m?.content;
  }
};

/** The scripted model of the example (deterministic: it reads only the conversation). */
export function headlinesModel(): Model {
  return scriptedModel(({ messages }) => {
    const start = messages.findLastIndex((m) => m.role === "user");
    const task = JSON.parse(messages[start].content) as HeadlinesTask;
    const method = task.method ?? "fetch_url";
    const turn = messages.slice(start + 1);
    if (turn.length === 0) {
      const fetchCall = { name: method, args: { url: task.url } };
      return { toolCalls: task.eagerParse ? [fetchCall, { name: "parse", args: { html: null } }] : [fetchCall] };
    }
    const names = new Map<string, string>();
    for (const m of turn) for (const c of m.toolCalls ?? []) names.set(c.id, c.name);
    const results = turn.filter((m) => m.role === "tool").map((m) => ({ name: names.get(m.toolCallId!)!, value: parsed(m) }));
    const isError = (v: unknown): v is { error: { type: string } } => !!v && typeof v === "object" && "error" in v;
    const lastParse = results.findLast((r) => r.name === "parse");
    if (lastParse && !isError(lastParse.value) && results.at(-1) === lastParse) {
      return { toolCalls: [{ name: "submit_result", args: { result: { site: task.site, headlines: lastParse.value } } }] };
    }
    const fetches = results.filter((r) => r.name === method);
    const page = fetches.findLast((r) => !isError(r.value))?.value as Record<string, unknown> | undefined;
    if (!page) {
      // Every fetch so far was refused: try again, at most three times.
      if (fetches.length >= 3) return { toolCalls: [{ name: "submit_result", args: { result: { site: task.site, error: "no page" } } }] };
      return { toolCalls: [{ name: method, args: { url: task.url } }] };
    }
    const bodyKey = Object.keys(page).find((k) => k.toLowerCase() === "body");
    return { toolCalls: [{ name: "parse", args: { html: bodyKey ? page[bodyKey] : null } }] };
  });
}

/** The agent of the example. */
export function headlinesAgent(opts: { contracts?: boolean; model?: Model } = {}): AnyAgent {
  const t = headlinesTools(opts);
  return defineAgent({
    name: "headlines",
    instructions: "Collect the headlines of the page the task names. Fetch it, parse it, submit { site, headlines }.",
    model: opts.model ?? headlinesModel(),
    tools: [t.fetchUrl, t.fetch, t.parse],
  });
}
