/**
 * HTTP: cancels aimed at a turn, reading a turn, cancelling a queued task.
 * The store side is covered by tests/store/store-conformance.ts on every adapter,
 * the race against the end of a turn by tests/host/host-cancel-race.int.test.ts.
 */
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createGatehouse, defineAgent, defineTool, memoryStore, scriptedModel } from "../../mod.ts";
import type { Store } from "../../mod.ts";
import { CancelAccepted, TaskCancelled, TurnView } from "../../routes/schemas.ts";

const ask = defineTool({ name: "ask_human", description: "Ask", parameters: z.object({ q: z.string() }) });

function setup(store: Store = memoryStore()) {
  const agent = defineAgent({
    name: "helper",
    instructions: "",
    model: scriptedModel([{ toolCalls: [{ name: "ask_human", args: { q: "?" } }] }, { text: "done" }]),
    tools: [ask],
  });
  const gh = createGatehouse({ agents: [agent], store });
  const call = (method: string, path: string, body?: unknown) =>
    gh.fetch(new Request(`http://gh.test${path}`, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    }));
  const task = async (input: string, idempotencyKey?: string) => {
    const res = await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input, ...(idempotencyKey ? { idempotencyKey } : {}) });
    expect(res.status).toBe(202);
    return (await res.json()).turnId as string;
  };
  return { gh, call, task };
}

async function problem(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  expect((await res.json()).code).toBe(code);
}

describe("routes: cancels aimed at a turn", () => {
  it("POST /cancel with the active turn's id cancels it; the answer names the turn", async () => {
    const { gh, call, task } = setup();
    const t1 = await task("one");
    await gh.drain();
    const res = await call("POST", "/v1/agents/a1/cancel", { turnId: t1, reason: "stop" });
    expect(res.status).toBe(202);
    expect(CancelAccepted.parse(await res.json())).toEqual({ accepted: true, turnId: t1 });
    await gh.drain();
    expect(TurnView.parse(await (await call("GET", `/v1/agents/a1/tasks/${t1}`)).json())).toEqual({ agentId: "a1", turnId: t1, status: "failed", input: "one" });
  });

  it("a cancel naming a finished turn is 409 turn_finished and leaves the running turn alone", async () => {
    const { gh, call, task } = setup();
    const t1 = await task("one");
    await gh.drain();
    await call("POST", "/v1/agents/a1/cancel", { turnId: t1 });
    await gh.drain();
    const t2 = await task("two");
    await gh.drain();
    const before = await gh.store.readEvents("a1", 0, 1_000);
    await problem(await call("POST", "/v1/agents/a1/cancel", { turnId: t1 }), 409, "turn_finished");
    expect(await gh.store.readEvents("a1", 0, 1_000)).toEqual(before);
    expect((await gh.store.getTurn("a1", t2))?.status).toBe("active");
  });

  it("a cancel naming a queued turn is 409 turn_not_started; an unknown one 404 turn_not_found; a bad id 400", async () => {
    const { gh, call, task } = setup();
    await task("one");
    const t2 = await task("two");
    await gh.drain();
    await problem(await call("POST", "/v1/agents/a1/cancel", { turnId: t2 }), 409, "turn_not_started");
    await problem(await call("POST", "/v1/agents/a1/cancel", { turnId: "turn_nope" }), 404, "turn_not_found");
    await problem(await call("POST", "/v1/agents/a1/cancel", { turnId: "bad\nid" }), 400, "validation_failed");
    await problem(await call("POST", "/v1/agents/a1/cancel", { turnId: "" }), 400, "validation_failed");
  });
});

describe("routes: queued tasks", () => {
  it("DELETE /tasks/:turnId cancels a queued task: it never runs, reads cancelled, its key keeps answering it", async () => {
    const { gh, call, task } = setup();
    const t1 = await task("one");
    const t2 = await task("two", "key-2");
    await gh.drain();
    const res = await call("DELETE", `/v1/agents/a1/tasks/${t2}`);
    expect(res.status).toBe(200);
    expect(TaskCancelled.parse(await res.json())).toEqual({ agentId: "a1", turnId: t2, status: "cancelled", duplicate: false });
    expect((await (await call("GET", `/v1/agents/a1/tasks/${t2}`)).json()).status).toBe("cancelled");
    const again = await call("POST", "/v1/agents/a1/tasks", { agent: "helper", input: "two", idempotencyKey: "key-2" });
    expect(await again.json()).toEqual({ agentId: "a1", turnId: t2, duplicate: true });
    const repeat = await call("DELETE", `/v1/agents/a1/tasks/${t2}`);
    expect(repeat.status).toBe(200);
    expect((await repeat.json()).duplicate).toBe(true);
    // Turn 1 finishes; turn 2 never starts.
    const events = await gh.store.readEvents("a1", 0, 1_000);
    const callId = events.find((e) => e.type === "tool_call")!.data.toolCallId;
    await call("POST", "/v1/agents/a1/tool-results", { turnId: t1, toolCallId: callId, outcome: { ok: true, value: "y" } });
    await gh.drain();
    const after = await gh.store.readEvents("a1", 0, 1_000);
    expect(after.some((e) => e.type === "transition" && (e.data.event as { turnId?: string }).turnId === t2)).toBe(false);
    expect(after.filter((e) => e.type === "task_cancelled").map((e) => e.turnId)).toEqual([t2]);
    expect((await gh.store.getAgent("a1"))).toMatchObject({ activeTurnId: null, pendingTasks: 0, state: "done" });
  });

  it("DELETE is 409 turn_started for the running turn, 409 turn_finished once it ended, 404 for unknown turns and agents", async () => {
    const { gh, call, task } = setup();
    const t1 = await task("one");
    await gh.drain();
    await problem(await call("DELETE", `/v1/agents/a1/tasks/${t1}`), 409, "turn_started");
    await problem(await call("DELETE", "/v1/agents/a1/tasks/turn_nope"), 404, "turn_not_found");
    await problem(await call("DELETE", `/v1/agents/ghost/tasks/${t1}`), 404, "agent_not_found");
    await call("POST", "/v1/agents/a1/cancel", {});
    await gh.drain();
    await problem(await call("DELETE", `/v1/agents/a1/tasks/${t1}`), 409, "turn_finished");
  });

  it("GET /tasks/:turnId reads queued, active and ended turns; 404 for unknown ones", async () => {
    const { gh, call, task } = setup();
    const t1 = await task("one");
    const t2 = await task("two");
    expect((await (await call("GET", `/v1/agents/a1/tasks/${t1}`)).json()).status).toBe("queued");
    await gh.drain();
    expect((await (await call("GET", `/v1/agents/a1/tasks/${t1}`)).json()).status).toBe("active");
    expect((await (await call("GET", `/v1/agents/a1/tasks/${t2}`)).json()).status).toBe("queued");
    await problem(await call("GET", "/v1/agents/a1/tasks/turn_nope"), 404, "turn_not_found");
    await problem(await call("GET", `/v1/agents/ghost/tasks/${t1}`), 404, "agent_not_found");
  });
});
