/**
 * The chat example's server (examples/chat/server.ts `listen`: the page and
 * gatehouse on one origin) as a child process for the browser test, with the
 * example's `assistant` whose pace the test controls: the model writes the
 * first half of each answer at once, then asks `gateUrl` and writes the rest
 * only once the test's gate answers. Started by `spawnScript`
 * (tests/helpers/processes.ts), configured by `GH_CHAT_EXAMPLE` (JSON of
 * `ChatExampleConfig`); prints `{ "ready": true, "url": … }` once it listens.
 * A short lease lets a server started after a SIGKILL take the turn over soon.
 */
import process from "node:process";
import { createGatehouse, memoryStore } from "@gatehouse-runtime/core";
import { redisStore } from "@gatehouse-runtime/core/redis";
import { createAssistant, type Pace } from "../../examples/chat/assistant.ts";
import { listen } from "../../examples/chat/server.ts";

export interface ChatExampleConfig {
  port: number;
  /** Where build.ts wrote the page. */
  dist: string;
  /** GET it before the middle word of every answer. */
  gateUrl: string;
  /** Redis (else the memory store). */
  redis?: { url: string; prefix: string };
  leaseMs: number;
}

async function main() {
  const cfg = JSON.parse(process.env.GH_CHAT_EXAMPLE ?? "") as ChatExampleConfig;
  const pace: Pace = async (word, of) => {
    if (word === Math.floor(of / 2)) await (await fetch(cfg.gateUrl)).text();
  };
  const gatehouse = createGatehouse({
    agents: [createAssistant(pace)],
    store: cfg.redis ? redisStore(cfg.redis) : memoryStore(),
    leaseMs: cfg.leaseMs,
    pollMs: 20,
    sse: { pollMs: 50 },
    watchdogIntervalMs: 200,
  });
  const server = await listen(gatehouse, cfg.port, cfg.dist);
  process.stdout.write(`${JSON.stringify({ ready: true, url: server.url, pid: process.pid })}\n`);
}

main().catch((err) => {
  process.stderr.write(`chat-example-server failed: ${(err as Error)?.stack ?? err}\n`);
  process.exit(1);
});
