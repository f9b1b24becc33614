/**
 * The concurrency key of a delegated child's task (agents/concurrency-key.ts):
 * the parent turn's key, unless the child's definition derives one (it sees
 * `parentKey` and `via: "delegation"`); a derived key that is not a key fails
 * the call with the error outcome `invalid_concurrency_key` and enqueues no child.
 */
import { describe, expect, it } from "vitest";
import { agentTool, createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import type { ConcurrencyKeyTask } from "../../agents/concurrency-key.ts";
import type { EnqueueTaskRequest } from "../../store/port.ts";

function run(childKey?: (t: ConcurrencyKeyTask) => string | null) {
  const base = memoryStore();
  const enqueued: EnqueueTaskRequest[] = [];
  const store = new Proxy(base, {
    get(t, p) {
      const v = Reflect.get(t, p);
      if (p !== "enqueueTask") return typeof v === "function" ? v.bind(t) : v;
      return (req: EnqueueTaskRequest) => (enqueued.push(req), t.enqueueTask(req));
    },
  }) as Store;
  const child = defineAgent({
    name: "researcher", instructions: "x",
    model: scriptedModel([{ toolCalls: [{ name: "submit_result", args: { result: "facts" } }] }]),
    ...(childKey ? { concurrencyKey: childKey } : {}),
  });
  const parent = defineAgent({
    name: "lead", instructions: "x", tools: [agentTool(child, { description: "Ask" })],
    model: scriptedModel([{ toolCalls: [{ name: "researcher", args: { input: "otters" } }] }, { text: "done" }]),
  });
  const gh = createGatehouse({ agents: [parent], store, concurrency: 1 });
  return { gh, store, enqueued };
}

async function drive(gh: ReturnType<typeof run>["gh"], store: Store) {
  const res = await gh.fetch(new Request("http://gh.test/v1/agents/p1/tasks", {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ agent: "lead", input: "go", concurrencyKey: "tenant:x" }),
  }));
  expect(res.status).toBe(202);
  for (let i = 0; i < 10 && (await store.getAgent("p1"))?.state !== "done"; i++) await gh.drain();
  expect((await store.getAgent("p1"))?.state).toBe("done");
}

describe("a delegated child's concurrency key", () => {
  it("is the parent turn's key when the child's definition derives none", async () => {
    const { gh, store, enqueued } = run();
    await drive(gh, store);
    const childTask = enqueued.find((r) => r.agentName === "researcher")!;
    expect(childTask.concurrencyKey).toBe("tenant:x");
    await gh.close();
  });

  it("is what the child's definition derives, which sees the parent's key", async () => {
    const seen: ConcurrencyKeyTask[] = [];
    const { gh, store, enqueued } = run((t) => (seen.push(t), `child-of:${t.parentKey}`));
    await drive(gh, store);
    expect(enqueued.find((r) => r.agentName === "researcher")!.concurrencyKey).toBe("child-of:tenant:x");
    expect(seen[0]).toMatchObject({ agentName: "researcher", input: "otters", via: "delegation", parentKey: "tenant:x" });
    await gh.close();
  });

  it("a derived key that is not a key fails the call; no child is enqueued", async () => {
    const { gh, store, enqueued } = run(() => "x".repeat(300));
    await drive(gh, store);
    expect(enqueued.filter((r) => r.agentName === "researcher")).toEqual([]);
    const turnId = enqueued[0].turnId;
    const [call] = await store.getToolCalls("p1", turnId);
    expect(call.outcome).toMatchObject({ ok: false, error: { type: "invalid_concurrency_key" } });
    await gh.close();
  });
});
