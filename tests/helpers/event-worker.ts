/**
 * A worker process for the named-event kill test: `createGatehouse` with an
 * agent whose tool waits for the event `payment.settled:<input>`, on the
 * Redis store named by GH_EVENT_WORKER (`{ url, prefix }`), `startWorker()`,
 * then `{ "ready": true }` on stdout, until it is killed
 * (tests/helpers/processes.ts `spawnScript`).
 */
import process from "node:process";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, scriptedModel } from "../../mod.ts";
import { redisStore } from "../../redis.ts";

export const EVENT_AGENT = defineAgent({
  name: "event-waiter",
  instructions: "Wait for the payment.",
  model: scriptedModel(({ step, messages }) =>
    step === 1
      ? { toolCalls: [{ name: "await_payment", args: { order: String(messages.find((m) => m.role === "user")?.content ?? "") } }] }
      : { toolCalls: [{ name: "submit_result", args: { result: String(messages.at(-1)?.content ?? "") } }] }
  ),
  tools: [defineTool({
    name: "await_payment",
    description: "Wait until the payment settles",
    parameters: z.object({ order: z.string() }),
    waitFor: (args) => ({ event: `payment.settled:${String(args.order)}` }),
  })],
});

if (process.env.GH_EVENT_WORKER) {
  const cfg = JSON.parse(process.env.GH_EVENT_WORKER) as { url: string; prefix: string };
  const gh = createGatehouse({ agents: [EVENT_AGENT], store: redisStore(cfg), leaseMs: 500 });
  gh.startWorker();
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  process.once("SIGTERM", () => void gh.close().then(() => process.exit(0)));
}
