/**
 * The model's memory and the store's retention, through createGatehouse()
 * and the memory store (actors/conversation/memory.ts, store/retention.ts): what the
 * model is shown after many turns, that the rolling summary is stored with
 * the commit and read back (never recomputed for turns it already covers),
 * and that a resident agent's history follows what the store trimmed.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type AnyAgent, defineAgent } from "../../agents/define.ts";
import { createGatehouse, type Gatehouse, type GatehouseOptions } from "../../gatehouse.ts";
import type { Message } from "../../common/message.ts";
import type { ModelRequest } from "../../models/types.ts";
import { memoryStore } from "../../store/memory.ts";
import type { Store } from "../../store/port.ts";
import { manualClock } from "../helpers/clock.ts";
import { enqueue, head, recordingModel } from "../helpers/host.ts";
import type { Summarizer } from "../../agents/memory-policy.ts";

const open: Gatehouse[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

function setup(agents: AnyAgent[], over: Partial<GatehouseOptions> = {}) {
  const clock = manualClock();
  const gh = createGatehouse({ agents, clock, leaseMs: 30_000, concurrency: 1, ...over });
  open.push(gh);
  return { gh, clock, store: gh.store };
}

/** Answers every turn in one step: submits "answer to <the turn's input>". */
const answering = () =>
  recordingModel((req: ModelRequest) => {
    if (req.tools.length === 0) return { text: `summary of ${req.messages.length - 1} messages` };
    const lastUser = [...req.messages].reverse().find((m) => m.role === "user")!;
    return { toolCalls: [{ name: "submit_result", args: { result: `answer to ${lastUser.content}` } }] };
  });

async function runTurns(gh: Gatehouse, store: Store, clock: ReturnType<typeof manualClock>, agent: AnyAgent, from: number, n: number) {
  for (let i = from; i < from + n; i++) {
    await enqueue(store, clock, "a1", agent, `q${i}`);
    await gh.drain();
    clock.advance(10);
  }
}

const users = (msgs: Message[]) => msgs.filter((m) => m.role === "user").map((m) => m.content);

describe("the model's memory", () => {
  it("shows the last keepTurns turns only, with plain truncation", async () => {
    const model = answering();
    const agent = defineAgent({ name: "m", instructions: "Help.", model, memory: { keepTurns: 2 } });
    const { gh, clock, store } = setup([agent]);
    await runTurns(gh, store, clock, agent, 1, 5);
    const last = model.requests.at(-1)!;
    expect(last.messages[0]).toEqual({ role: "system", content: "Help." });
    expect(users(last.messages)).toEqual(["q4", "q5"]);
    expect(last.messages.some((m) => m.content.startsWith("Summary of"))).toBe(false);
    // The store keeps the whole conversation (retention's limits are far away); the view moved.
    const conv = (await store.readConversation("a1"))!;
    expect(users(conv.messages)).toEqual(["q1", "q2", "q3", "q4", "q5"]);
    // Three messages a turn (user, assistant, the submit's tool message): the view starts at turn 4's.
    expect(conv.summary).toEqual({ content: "", through: 9 });
  });

  it("keeps a rolling summary from the user's hook, stored with the commit and read back after a restart", async () => {
    const calls: Array<{ previous: string | null; users: string[] }> = [];
    const summarize: Summarizer = async ({ previous, messages }) => {
      calls.push({ previous, users: users([...messages]) });
      return `${previous ? previous + " + " : ""}${users([...messages]).join(",")}`;
    };
    const model = answering();
    const agent = defineAgent({ name: "m", instructions: "Help.", model, memory: { keepTurns: 2, summarize } });
    const store = memoryStore();
    const first = setup([agent], { store });
    await runTurns(first.gh, store, first.clock, agent, 1, 4);
    expect(calls).toEqual([{ previous: null, users: ["q1"] }, { previous: "q1", users: ["q2"] }]);
    expect(model.requests.at(-1)!.messages[1]).toEqual({ role: "system", content: "Summary of the earlier conversation:\nq1 + q2" });
    expect((await store.readConversation("a1"))!.summary).toEqual({ content: "q1 + q2", through: 6 });
    const events = (await store.readEvents("a1", 0, 1000)).filter((e) => e.type === "memory_rolled");
    expect(events.map((e) => e.data)).toEqual([{ through: 3, summaryChars: 2 }, { through: 6, summaryChars: 7 }]);

    // A new process (nothing resident): the stored summary is shown as it is, not computed again.
    await first.gh.close();
    open.splice(open.indexOf(first.gh), 1);
    const second = setup([agent], { store });
    second.clock.set(first.clock.now() + 1_000);
    await runTurns(second.gh, store, second.clock, agent, 5, 1);
    expect(calls).toHaveLength(3);
    expect(calls[2]).toEqual({ previous: "q1 + q2", users: ["q3"] });
    const seen = model.requests.at(-1)!.messages;
    expect(seen[1]).toEqual({ role: "system", content: "Summary of the earlier conversation:\nq1 + q2 + q3" });
    expect(users(seen)).toEqual(["q4", "q5"]);
  });

  it("asks the agent's own model for the summary with summarize: \"model\"; a failing summary keeps the old one", async () => {
    let fail = false;
    const model = recordingModel((req: ModelRequest) => {
      if (req.tools.length === 0) {
        if (fail) throw new Error("summary service down");
        return { text: `S${req.messages[1].content.length}` };
      }
      return { toolCalls: [{ name: "submit_result", args: { result: "ok" } }] };
    });
    const agent = defineAgent({ name: "m", instructions: "Help.", model, memory: { keepTurns: 1, summarize: "model" } });
    const { gh, clock, store } = setup([agent]);
    await runTurns(gh, store, clock, agent, 1, 2);
    const summaryCall = model.requests.find((r) => r.tools.length === 0)!;
    expect(summaryCall.messages[0].content).toMatch(/^Summarize the conversation/);
    expect(summaryCall.messages[1].content).toContain("user: q1");
    const before = (await store.readConversation("a1"))!.summary!;
    expect(before.content).toMatch(/^S\d+$/);
    fail = true;
    await runTurns(gh, store, clock, agent, 3, 1);
    const after = (await store.readConversation("a1"))!.summary!;
    expect(after.content).toBe(before.content);
    expect(after.through).toBeGreaterThan(before.through);
    expect((await store.readEvents("a1", 0, 1000)).filter((e) => e.type === "summary_failed")).toHaveLength(1);
    expect((await head(store, "a1")).state).toBe("done");
  });

  it("refuses a memory policy that shows more turns than the store keeps, and bad limits", () => {
    const model = answering();
    const agent = defineAgent({ name: "m", instructions: "Help.", model, memory: { keepTurns: 50 } });
    expect(() => createGatehouse({ agents: [agent], retention: { maxTurns: 10 } })).toThrow(/memory.keepTurns \(50\) is more than retention.maxTurns \(10\)/);
    expect(() => defineAgent({ name: "x", instructions: "", model, memory: { keepTurns: 0 } })).toThrow(/memory.keepTurns must be a positive integer/);
    expect(() => defineAgent({ name: "x", instructions: "", model, retention: { maxEvents: -1 } })).toThrow(/retention.maxEvents must be a positive integer/);
    expect(() => createGatehouse({ agents: [agent], retention: { maxTurnz: 1 } as never })).toThrow(/retention has an unknown key "maxTurnz" \(did you mean "maxTurns"\?\)/);
  });
});

describe("retention through the host", () => {
  it("bounds the stored log and conversation; the resident history follows the store's trimming", async () => {
    const model = answering();
    const agent = defineAgent({ name: "m", instructions: "Help.", model, retention: { maxEvents: 40, maxTurns: 3, checkpointEvery: 10 } });
    const { gh, clock, store } = setup([agent]);
    await runTurns(gh, store, clock, agent, 1, 30);
    const h = await head(store, "a1");
    expect(h.eventsTrimmedThrough).toBeGreaterThan(0);
    expect(h.messagesTrimmedThrough).toBeGreaterThan(0);
    const events = await store.readEvents("a1", 0, 10_000);
    expect(events[0].id).toBe(h.eventsTrimmedThrough + 1);
    expect(events.at(-1)!.id).toBe(h.lastEventId);
    // The last model call was shown what the store held before that turn's end: a whole number of
    // turns (a resident history that ignored the trimming would show all 87 earlier messages).
    const conv = (await store.readConversation("a1"))!;
    const shown = model.requests.at(-1)!.messages.slice(1);
    expect(shown.length).toBeLessThan(40);
    expect(shown[0].role).toBe("user");
    const kept = conv.messages.slice(0, -2);
    expect(shown.slice(shown.length - kept.length)).toEqual(kept);
    expect(users(shown).at(-1)).toBe("q30");
    // A fresh process reads the same conversation back.
    expect(conv.firstIndex).toBe(h.messagesTrimmedThrough);
  });

  it("keeps everything with retention: false", async () => {
    const model = answering();
    const agent = defineAgent({ name: "m", instructions: "Help.", model, retention: { maxEvents: 5 } });
    const { gh, clock, store } = setup([agent], { retention: false });
    await runTurns(gh, store, clock, agent, 1, 5);
    // The agent's own limits still apply over `false`: they are its own.
    expect((await head(store, "a1")).eventsTrimmedThrough).toBeGreaterThan(0);
    const plain = defineAgent({ name: "p", instructions: "Help.", model });
    const other = setup([plain], { retention: false });
    for (let i = 0; i < 5; i++) {
      await enqueue(other.store, other.clock, "b1", plain, `q${i}`);
      await other.gh.drain();
    }
    expect((await head(other.store, "b1")).eventsTrimmedThrough).toBe(0);
  });
});
