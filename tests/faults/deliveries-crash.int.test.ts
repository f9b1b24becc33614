/**
 * A server process killed (SIGKILL) with signed deliveries in flight
 * (routes/auth.ts, transport dedup): the sender's retries, sent to another
 * process of the same deployment, succeed within 10 s of the kill, and every
 * delivery runs exactly once, counted in the store.
 *
 * Two server processes (tests/helpers/delivery-server.ts) share one real
 * Redis. 400 deliveries go to the first, each its own agent and message id:
 * 40 of them (`hold-*`) are held open before the route wrote anything, 40
 * (`after-*`) after it wrote the task but before the answer was recorded,
 * the rest run. Once all 80 are held, the first process is killed; the
 * sender retries every delivery, unanswered or not, at the second until it
 * gets a 2xx.
 */
import { afterAll, describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import { redisStore } from "../../redis.ts";
import { useRedisServer } from "../helpers/redis.ts";
import { sleep, spawnScript, waitFor, type WorkerHandle } from "../helpers/processes.ts";
import type { DeliveryServerConfig } from "../helpers/delivery-server.ts";

const SCRIPT = fileURLToPath(new URL("../helpers/delivery-server.ts", import.meta.url));
const SECRET = "whsec_" + btoa("crash-test-secret-0123456789abcd");
const HELD = 40;
const TOTAL = 400;

const redis = useRedisServer({}, 60_000);
const children: WorkerHandle[] = [];
afterAll(async () => {
  for (const c of children) await c.stop();
});

interface Delivery {
  agentId: string;
  body: string;
  headers: Record<string, string>;
}

async function start(name: string, cfg: DeliveryServerConfig): Promise<{ handle: WorkerHandle; port: number }> {
  const handle = await spawnScript(SCRIPT, name, { GH_DELIVERY_SERVER: JSON.stringify(cfg) });
  children.push(handle);
  await handle.ready;
  return { handle, port: Number(handle.lines.find((l) => l.ready === true)!.port) };
}

async function send(port: number, d: Delivery): Promise<{ status: number; body: string } | null> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/v1/agents/${d.agentId}/tasks`, {
      method: "POST",
      headers: { "content-type": "application/json", ...d.headers },
      body: d.body,
    });
    return { status: r.status, body: await r.text() };
  } catch {
    return null; // the connection died with the process
  }
}

describe("signed deliveries across a SIGKILL", () => {
  it("retries at a surviving process succeed within 10 s of the kill and every delivery runs exactly once", async () => {
    const prefix = `dlvcrash${Date.now() % 1_000_000}`;
    const base = { redisUrl: redis.url, prefix, webhookSecret: SECRET };
    const [doomed, survivor] = await Promise.all([start("doomed", { ...base, stall: true }), start("survivor", { ...base, stall: false })]);

    const wh = new Webhook(SECRET);
    const ids = Array.from({ length: TOTAL }, (_, i) => (i < HELD ? `hold-${i}` : i < 2 * HELD ? `after-${i}` : `plain-${i}`));
    const deliveries: Delivery[] = ids.map((agentId, i) => {
      const body = JSON.stringify({ agent: "helper", input: agentId });
      const id = `msg_crash_${i}`;
      const at = new Date();
      return { agentId, body, headers: { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": wh.sign(id, at, body) } };
    });

    const firsts = deliveries.map((d) => send(doomed.port, d));
    const answered = new Map<string, { status: number; body: string }>();
    firsts.forEach((p, i) => p.then((r) => r && answered.set(ids[i], r)));
    // Every held delivery is inside the route, every other one answered: then the process dies.
    await waitFor("80 held deliveries and 320 answers", () => {
      const stalled = doomed.handle.lines.filter((l) => typeof l.stalled === "string").length;
      return stalled === 2 * HELD && answered.size === TOTAL - 2 * HELD;
    }, 60_000);
    for (const [agentId, r] of answered) expect([agentId, r.status]).toEqual([agentId, 202]);
    doomed.handle.signal("SIGKILL");
    const killedAt = Date.now();
    await doomed.handle.exited;
    expect((await Promise.all(firsts)).filter((r) => r === null)).toHaveLength(2 * HELD);

    // The sender retries every delivery (answered or not) until it gets a 2xx.
    const inProgress: string[] = [];
    const slowest = { ms: 0 };
    const retried = await Promise.all(deliveries.map(async (d) => {
      for (;;) {
        const r = await send(survivor.port, d);
        if (r !== null && r.status < 300) {
          slowest.ms = Math.max(slowest.ms, Date.now() - killedAt);
          return r;
        }
        if (r?.status === 409 && JSON.parse(r.body).code === "delivery_in_progress") inProgress.push(d.agentId);
        else throw new Error(`retry of ${d.agentId} answered ${r?.status} ${r?.body}`);
        if (Date.now() - killedAt > 30_000) throw new Error(`retry of ${d.agentId} still in progress 30 s after the kill`);
        await sleep(250);
      }
    }));
    console.log(`slowest retry ${slowest.ms} ms after the kill; ${inProgress.length} answers 409 delivery_in_progress`);
    expect(slowest.ms).toBeLessThan(10_000);
    // Only the deliveries the dead process held were ever in progress.
    expect(inProgress.every((id) => id.startsWith("hold-") || id.startsWith("after-"))).toBe(true);
    // A delivery answered before the kill gets that answer.
    retried.forEach((r, i) => {
      const first = answered.get(ids[i]);
      if (first) expect(r.body).toBe(first.body);
    });

    // Exactly once: one task per delivery in the store.
    const store = redisStore({ url: redis.url, prefix });
    try {
      const counts = await Promise.all(ids.map(async (agentId) => (await store.readEvents(agentId, 0, 100)).filter((e) => e.type === "task_enqueued").length));
      expect(ids.filter((_, i) => counts[i] !== 1).map((id, k) => `${id}: ${counts[ids.indexOf(id)]}`)).toEqual([]);
      // The deliveries that had written their task before the kill answer that turn on retry.
      retried.forEach((r, i) => {
        if (ids[i].startsWith("after-")) expect(JSON.parse(r.body).duplicate).toBe(true);
      });
    } finally {
      await store.close();
    }
  }, 120_000);
});
