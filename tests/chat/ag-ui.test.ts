/**
 * `POST /v1/ag-ui` on the memory store, in process (the app's own fetch),
 * read by `@ag-ui/client`'s `HttpAgent` (tests/chat/ag-ui-cases.ts): live
 * text, a tool call with its result, an approval approved and one denied;
 * bad input is 400 problem+json and enqueues nothing; a scoped token reaches
 * only its tenant, and answering an interrupt needs `approve`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createGatehouse, type Gatehouse, memoryStore, type Store } from "../../mod.ts";
import { CHAT_NO_APPROVE, CHAT_SCOPED, CHAT_TOKEN, chatAuth, chatWorld } from "../helpers/chat-world.ts";
import { agUiAgent, type AgUiRig, approval, liveText, run, toolCall, user } from "./ag-ui-cases.ts";

const open: Gatehouse[] = [];
afterEach(async () => {
  for (const g of open.splice(0)) await g.close();
});

function rig(store: Store = memoryStore()): AgUiRig & { store: Store } {
  const w = chatWorld();
  const gh = createGatehouse({ agents: [w.agent], store, auth: chatAuth(), sse: { pollMs: 20 } });
  gh.startWorker();
  open.push(gh);
  const fetch = (url: string, init: RequestInit) => gh.fetch(new Request(url, init));
  return { gh, url: "http://gh.test", fetch, paid: w.paid, gates: w.gates, store };
}

const post = (r: AgUiRig, body: unknown, token = CHAT_TOKEN) =>
  r.fetch("http://gh.test/v1/ag-ui", {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });

const input = (threadId: string, extra: Record<string, unknown> = {}) => ({
  threadId, runId: "r1", messages: [user("m1", "look here")], tools: [], context: [], forwardedProps: { agent: "assistant" }, ...extra,
});

describe("AG-UI (memory, in process)", () => {
  it("live text arrives while the model works; the run ends RUN_FINISHED with the whole answer", async () => {
    await liveText(rig(), "a-live");
  }, 30_000);

  it("a tool call: TOOL_CALL_START/ARGS/END and its TOOL_CALL_RESULT", async () => {
    await toolCall(rig(), "a-look");
  }, 30_000);

  it("an approval is an interrupt; resumed approved, the tool runs", async () => {
    await approval(rig(), "a-pay-yes", true);
  }, 30_000);

  it("an approval resumed denied: the tool never runs", async () => {
    await approval(rig(), "a-pay-no", false);
  }, 30_000);

  it("a cancelled resume entry rejects the call", async () => {
    const r = rig();
    const agent = agUiAgent(r, "a-pay-cancel");
    agent.addMessage(user("m-c", "pay 3"));
    await run(agent);
    const id = agent.pendingInterrupts[0].id;
    const { events } = await run(agent, { resume: [{ interruptId: id, status: "cancelled" }] });
    const result = events.find((e) => e.type === "TOOL_CALL_RESULT") as { content: string } | undefined;
    expect(JSON.parse(result!.content)).toEqual({ denied: true });
    expect(r.paid).toEqual([]);
  }, 30_000);

  it("bad input is 400 problem+json and enqueues nothing", async () => {
    const r = rig();
    const bad: Array<[string, unknown]> = [
      ["no forwardedProps.agent", { ...input("a-bad"), forwardedProps: {} }],
      ["no runId", { ...input("a-bad"), runId: undefined }],
      ["a bad agent id", input("a bad id!")],
      ["the last message is the assistant's", input("a-bad", { messages: [{ id: "x", role: "assistant", content: "hi" }] })],
      ["no messages", input("a-bad", { messages: [] })],
      ["an empty user message", input("a-bad", { messages: [user("m1", "  ")] })],
      ["a message the protocol refuses", input("a-bad", { messages: [{ id: "x", role: "user" }] })],
      ["a resume payload that is not { approved }", input("a-bad", { resume: [{ interruptId: "c1", status: "resolved", payload: { ok: 1 } }] })],
    ];
    for (const [why, body] of bad) {
      const res = await post(r, body);
      const problem = await res.json() as { code: string };
      expect(res.status, `${why}: ${JSON.stringify(problem)}`).toBe(400);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
      expect(problem.code).toBe("validation_failed");
    }
    expect(await r.store.getAgent("a-bad")).toBeNull();
    const unknown = await post(r, input("a-bad", { forwardedProps: { agent: "nobody" } }));
    expect(unknown.status).toBe(422);
    expect(await r.store.getAgent("a-bad")).toBeNull();
    // The client itself sees the refusal as an error.
    const agent = agUiAgent(r, "a-bad");
    agent.addMessage({ id: "x", role: "assistant", content: "hi" });
    await expect(run(agent)).rejects.toThrow(/400/);
    expect(await r.store.getAgent("a-bad")).toBeNull();
  }, 30_000);

  it("a scoped token reaches only its tenant; answering an interrupt needs approve", async () => {
    const r = rig();
    expect((await post(r, input("b-other"), CHAT_SCOPED)).status).toBe(403);
    expect(await r.store.getAgent("b-other")).toBeNull();
    expect((await post(r, input("a-mine"), "not-a-token-at-all-0123456")).status).toBe(401);
    const agent = agUiAgent(r, "a-mine", CHAT_SCOPED);
    agent.addMessage(user("m-p", "pay 2"));
    await run(agent);
    const id = agent.pendingInterrupts[0].id;
    const noApprove = await post(r, input("a-mine", { resume: [{ interruptId: id, status: "resolved", payload: { approved: true } }] }), CHAT_NO_APPROVE);
    expect(noApprove.status).toBe(403);
    const calls = await r.store.getToolCalls("a-mine", (await r.store.getAgent("a-mine"))!.activeTurnId!);
    expect(calls.map((c) => c.approval?.status)).toEqual(["pending"]);
    expect(r.paid).toEqual([]);
  }, 30_000);
});
