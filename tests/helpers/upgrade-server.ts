/**
 * A server process of the rolling-upgrade test (tests/ops/rolling-upgrade.int.test.ts),
 * of either build: the gatehouse of the tree at GH_ROOT (this tree, or the
 * build before versions checked out into a temp dir) with one agent,
 * `assistant`, on a Redis store, its workers started. Each turn asks an
 * external `ask` tool once (the test answers it), then answers.
 *
 * stdout: `{ "ready": true }` once the workers run, then log lines as JSON.
 * SIGTERM: drains when the build can (`drainWorker`), closes and exits 0.
 */
import process from "node:process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const root = process.env.GH_ROOT!;
const cfg = JSON.parse(process.env.GH_UPGRADE_SERVER!) as { url: string; prefix: string; leaseMs: number; name: string };
const mod = await import(pathToFileURL(join(root, "mod.ts")).href);
const { redisStore } = await import(pathToFileURL(join(root, "redis.ts")).href);
const { z } = await import("zod");

const ask = mod.defineTool({ name: "ask", description: "Ask a person", parameters: z.object({}) });
const model = {
  name: "upgrade-model",
  async generate(req: { step: number; turnId: string }) {
    return req.step === 1 ? { toolCalls: [{ id: `ask-${req.turnId}`, name: "ask", args: {} }] } : { text: "done" };
  },
};
const agent = mod.defineAgent({ name: "assistant", instructions: "Help.", model, tools: [ask] });
const line = (o: Record<string, unknown>) => process.stdout.write(JSON.stringify({ process: cfg.name, ...o }) + "\n");
const at = (level: string) => (msg: string, fields?: Record<string, unknown>) => {
  if (level !== "debug") line({ level, msg, ...fields });
};
const logger = { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
const gh = mod.createGatehouse({
  agents: [agent], store: redisStore({ url: cfg.url, prefix: cfg.prefix }), logger, leaseMs: cfg.leaseMs, concurrency: 4, pollMs: 20, idlePollMaxMs: 200,
});
gh.startWorker();
line({ ready: true });
process.once("SIGTERM", () => {
  void (async () => {
    if (typeof gh.drainWorker === "function") await gh.drainWorker();
    await gh.close();
    line({ exiting: true });
    process.exit(0);
  })();
});
