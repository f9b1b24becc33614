/**
 * An HTTP server process for the delivery crash test
 * (tests/faults/deliveries-crash.int.test.ts): `createGatehouse` on a Redis store with
 * Standard Webhooks auth, served by entry/node-server.ts on a free port. It
 * starts no workers: the test counts what the routes wrote (queued tasks).
 *
 * Run through tests/helpers/processes.ts (`spawnScript`); the configuration
 * is the JSON in the environment variable GH_DELIVERY_SERVER
 * (`DeliveryServerConfig`).
 *
 * Contract with the parent:
 * - stdout carries one JSON object per line: `{ "ready": true, "port" }` once
 *   it listens, then `{ "stalled": agentId, "phase" }` for each delivery it
 *   holds open (below), and the runtime's warnings and errors.
 * - With `stall`, the tasks route's store call of an agent whose id starts
 *   with `hold-` never starts (the process dies before the delivery did
 *   anything), and one whose id starts with `after-` writes the task and then
 *   never returns (the process dies after the effect, before the answer is
 *   recorded). Other agents run normally. The store itself is the real Redis
 *   store; only the route's wait is added.
 */
import process from "node:process";
import { createGatehouse, defineAgent, scriptedModel } from "../../mod.ts";
import type { Logger, Store } from "../../mod.ts";
import { redisStore } from "../../redis.ts";
import { createNodeServer } from "../../entry/node-server.ts";

export interface DeliveryServerConfig {
  redisUrl: string;
  prefix: string;
  webhookSecret: string;
  stall: boolean;
}

const print = (o: Record<string, unknown>) => process.stdout.write(JSON.stringify(o) + "\n");

function stalling(store: Store): Store {
  const never = new Promise<never>(() => {});
  return new Proxy(store, {
    get(target, key, receiver) {
      const v = Reflect.get(target, key, receiver);
      if (typeof v !== "function") return v;
      if (key !== "enqueueTask") return v.bind(target);
      return async (req: Parameters<Store["enqueueTask"]>[0]) => {
        if (req.agentId.startsWith("hold-")) {
          print({ stalled: req.agentId, phase: "before" });
          return never;
        }
        const r = await target.enqueueTask(req);
        if (req.agentId.startsWith("after-")) {
          print({ stalled: req.agentId, phase: "after" });
          return never;
        }
        return r;
      };
    },
  });
}

async function main() {
  const raw = process.env.GH_DELIVERY_SERVER;
  if (!raw) throw new Error("GH_DELIVERY_SERVER (JSON DeliveryServerConfig) is not set");
  const cfg = JSON.parse(raw) as DeliveryServerConfig;
  const log = (level: string) => (msg: string, fields?: Record<string, unknown>) => print({ level, msg, ...fields });
  const logger: Logger = { debug: () => {}, info: () => {}, warn: log("warn"), error: log("error") };
  const store = redisStore({ url: cfg.redisUrl, prefix: cfg.prefix });
  const gh = createGatehouse({
    agents: [defineAgent({ name: "helper", instructions: "Answer.", model: scriptedModel([{ text: "done" }]) })],
    store: cfg.stall ? stalling(store) : store,
    auth: { webhookSecrets: [cfg.webhookSecret] },
    rateLimits: false,
    logger,
  });
  const server = createNodeServer(gh.app.fetch, logger);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  print({ ready: true, port: typeof address === "object" && address ? address.port : 0 });
  process.on("SIGTERM", () => {
    server.close();
    gh.close().finally(() => process.exit(0));
  });
}

main().catch((err) => {
  process.stderr.write(`delivery-server failed: ${(err as Error)?.stack ?? err}\n`);
  process.exit(1);
});
