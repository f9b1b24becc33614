/**
 * The chat example's server: one Hono app that answers the page (`/` and
 * `/app.js`, from the folder build.ts writes) and hands every other request
 * to gatehouse (`/v1/chat`, `/v1/chat/:id/stream`, `/v1/chat/:id/messages`
 * and the rest of the API). Page and API share an origin, so no CORS.
 *
 *   npx tsx examples/chat/build.ts     # writes examples/chat/dist/
 *   npx tsx examples/chat/server.ts    # http://127.0.0.1:8788
 *
 * `GATEHOUSE_REDIS_URL=redis://…` keeps the agents in Redis (else memory):
 * with it, a server killed mid-answer and started again finishes the answer
 * and the reloaded page shows it. `PORT` picks the port.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { createGatehouse, type Gatehouse, memoryStore } from "@gatehouse-runtime/core";
import { redisStore } from "@gatehouse-runtime/core/redis";
import { assistant } from "./assistant.ts";

/** The folder build.ts writes by default. */
export const distDir = () => fileURLToPath(new URL("./dist/", import.meta.url));

const PAGE_FILES: Record<string, { file: string; type: string }> = {
  "/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
};

/** The page's two files from `dir`, then gatehouse for everything else. */
export function chatApp(gatehouse: Gatehouse, dir: string = distDir()): Hono {
  const app = new Hono();
  for (const [path, { file, type }] of Object.entries(PAGE_FILES)) {
    app.get(path, async (c) => {
      const body = await readFile(join(dir, file)).catch(() => null);
      if (body === null) return c.text(`${file} is missing: run npx tsx examples/chat/build.ts`, 404);
      return c.body(body, 200, { "content-type": type, "cache-control": "no-store" });
    });
  }
  app.all("*", (c) => gatehouse.fetch(c.req.raw));
  return app;
}

/** Serves `chatApp` on `port` (0: a free one) and starts the workers. */
export function listen(gatehouse: Gatehouse, port: number, dir?: string): Promise<{ url: string; close: () => Promise<void> }> {
  return new Promise((resolve) => {
    const server = serve({ fetch: chatApp(gatehouse, dir).fetch, port, hostname: "127.0.0.1" }, (info) => {
      gatehouse.startWorker();
      resolve({
        url: `http://127.0.0.1:${info.port}`,
        async close() {
          server.close();
          await gatehouse.close();
        },
      });
    });
  });
}

async function main() {
  const url = process.env.GATEHOUSE_REDIS_URL;
  const store = url ? redisStore({ url }) : memoryStore();
  const gatehouse = createGatehouse({ agents: [assistant], store });
  const server = await listen(gatehouse, Number(process.env.PORT ?? 8788));
  process.stdout.write(`chat example on ${server.url} (store: ${url ? "redis" : "memory"})\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

if (import.meta.url === `file://${process.argv[1]}`) void main();
