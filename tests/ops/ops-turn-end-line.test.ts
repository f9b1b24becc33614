/**
 * At `info`, every turn that ends writes one line, `turn_end`, with the
 * agent, the turn, its status, its model steps and the time of the claim
 * that ended it (actors/pool/claim-attempt.ts `logTurnEnd`): from the worker
 * pool, from `drain()`, and for each turn of a chain of turns run in one
 * claim. A drain that claims nothing writes none.
 */
import { describe, expect, it } from "vitest";
import { createGatehouse, defineAgent, memoryStore, scriptedModel } from "../../mod.ts";
import type { Logger } from "../../mod.ts";
import { jsonRequest } from "../helpers/http.ts";

type Line = { level: string; msg: string; fields: Record<string, unknown> };
function capture(): { lines: Line[]; logger: Logger } {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void lines.push({ level, msg, fields });
  return { lines, logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } };
}

const submit = { toolCalls: [{ name: "submit_result", args: { result: { ok: true } } }] };
const quick = defineAgent({ name: "quick", instructions: "x", model: scriptedModel(() => submit) });

const post = (path: string, body: unknown) => jsonRequest("POST", path, body, {}, "http://g");

describe("turn_end line", () => {
  it("one line per ended turn, with agent, turn, status, steps and ms; chained turns each get theirs", async () => {
    const { lines, logger } = capture();
    const g = createGatehouse({ agents: [quick], store: memoryStore(), logger });
    try {
      const turns: string[] = [];
      for (const input of ["a", "b", "c"]) {
        const r = await g.fetch(post("/v1/agents/q1/tasks", { agent: "quick", input }));
        expect(r.status).toBe(202);
        turns.push(((await r.json()) as { turnId: string }).turnId);
      }
      await g.drain();
      const ends = lines.filter((l) => l.msg === "turn_end");
      expect(ends.map((l) => l.level)).toEqual(["info", "info", "info"]);
      expect(ends.map((l) => l.fields.turnId)).toEqual(turns);
      for (const l of ends) {
        expect(l.fields).toMatchObject({ agentId: "q1", agent: "quick", status: "done", steps: 1 });
        expect(typeof l.fields.ms).toBe("number");
      }
      // Draining again: no claim, no line.
      await g.drain();
      expect(lines.filter((l) => l.msg === "turn_end")).toHaveLength(3);
    } finally {
      await g.close();
    }
  });

  it("from the running pool too", async () => {
    const { lines, logger } = capture();
    const g = createGatehouse({ agents: [quick], store: memoryStore(), logger, pollMs: 20 });
    try {
      g.startWorker();
      expect((await g.fetch(post("/v1/agents/p1/tasks", { agent: "quick", input: "go" }))).status).toBe(202);
      const t0 = Date.now();
      while (!lines.some((l) => l.msg === "turn_end") && Date.now() - t0 < 20_000) await new Promise((r) => setTimeout(r, 10));
      expect(lines.filter((l) => l.msg === "turn_end").map((l) => l.fields)).toMatchObject([{ agentId: "p1", agent: "quick", status: "done", steps: 1 }]);
    } finally {
      await g.close();
    }
  }, 30_000);
});
