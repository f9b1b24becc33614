/**
 * Runs a Worker module inside workerd through Miniflare's API: the module is
 * bundled the way wrangler bundles it (tests/workerd/bundle.ts), without the
 * `nodejs_compat` flag, so a Node built-in anywhere in it fails the start.
 * Outbound fetch from workerd to 127.0.0.1 is allowed, so the Worker reaches
 * the Upstash bridge (tests/helpers/upstash-bridge.ts) in front of a real Redis.
 */
import { Miniflare } from "miniflare";
import { bundleForWorkerd } from "./bundle.ts";

/** The compatibility date the suites run with (one this Miniflare's workerd supports). */
export const COMPATIBILITY_DATE = "2026-04-01";

export interface RunningWorker {
  /** Sends a request to the Worker's `fetch`; `path` is joined to http://worker.test. */
  fetch(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  /** Runs the Worker's `scheduled` handler once (a cron trigger firing). */
  scheduled(): Promise<{ outcome: string }>;
  dispose(): Promise<void>;
  /** Size of the bundled module (characters). */
  readonly bytes: number;
}

export async function startWorker(
  entry: string | { script: string },
  opts: { bindings: Record<string, string>; define?: Record<string, unknown>; port?: number; compatibilityDate?: string },
): Promise<RunningWorker & { url: URL }> {
  let script: string;
  if (typeof entry === "string") {
    const define = Object.fromEntries(Object.entries(opts.define ?? {}).map(([k, v]) => [k, JSON.stringify(v)]));
    const bundle = await bundleForWorkerd(entry, define);
    if (bundle.nodeBuiltins.length > 0) {
      throw new Error(`${entry} needs Node built-ins: ${JSON.stringify(bundle.nodeBuiltins)}`);
    }
    script = bundle.code;
  } else {
    script = entry.script;
  }
  const mf = new Miniflare({
    modules: true,
    script,
    compatibilityDate: opts.compatibilityDate ?? COMPATIBILITY_DATE,
    bindings: opts.bindings,
    ...(opts.port !== undefined ? { host: "127.0.0.1", port: opts.port } : {}),
  });
  const url = await mf.ready;
  return {
    url,
    bytes: script.length,
    async fetch(path, init = {}) {
      const { json, ...rest } = init;
      const body = json !== undefined ? JSON.stringify(json) : rest.body;
      const headers = new Headers(rest.headers);
      if (json !== undefined) headers.set("content-type", "application/json");
      const res = await mf.dispatchFetch(`http://worker.test${path}`, { ...rest, headers, body } as never);
      return res as unknown as Response;
    },
    async scheduled() {
      const w = (await mf.getWorker()) as unknown as {
        scheduled(o: { cron: string; scheduledTime: Date }): Promise<{ outcome: string }>;
      };
      return await w.scheduled({ cron: "* * * * *", scheduledTime: new Date() });
    },
    dispose: () => mf.dispose(),
  };
}

/** Polls `check` until it returns a value that is not undefined; fails after `ms`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
