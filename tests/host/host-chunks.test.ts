import { describe, expect, it } from "vitest";
import { CHUNK_EVENT_CHARS, coalesceChunks } from "../../actors/steps/model-step.ts";
import { createGatehouse, defineAgent } from "../../mod.ts";
import type { Model } from "../../mod.ts";

describe("chunk events", () => {
  it("coalesceChunks joins deltas into pieces of at least CHUNK_EVENT_CHARS, losing nothing", () => {
    const deltas = Array.from({ length: 2_000 }, (_, i) => String.fromCharCode(97 + (i % 26)));
    const pieces = coalesceChunks(deltas);
    expect(pieces.join("")).toBe(deltas.join(""));
    expect(pieces.length).toBe(Math.ceil(2_000 / CHUNK_EVENT_CHARS));
    for (const p of pieces.slice(0, -1)) expect(p.length).toBeGreaterThanOrEqual(CHUNK_EVENT_CHARS);
    expect(coalesceChunks([])).toEqual([]);
    expect(coalesceChunks(["a", "b"])).toEqual(["ab"]);
  });

  it("a model streaming one delta per token logs a bounded number of chunk events with the whole text", async () => {
    const text = "token ".repeat(1_000);
    const model: Model = {
      name: "streaming",
      async generate(req) {
        for (const piece of text.match(/token /g)!) req.onChunk?.(piece);
        return { text };
      },
    };
    const gh = createGatehouse({ agents: [defineAgent({ name: "talker", instructions: "talk", model })] });
    await gh.fetch(new Request("http://x/v1/agents/t1/tasks", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ agent: "talker", input: "go" }),
    }));
    await gh.drain();
    const chunks = (await gh.store.readEvents("t1", 0, 1_000)).filter((e) => e.type === "chunk");
    expect(chunks.map((c) => c.data.text).join("")).toBe(text);
    expect(chunks.length).toBeLessThanOrEqual(Math.ceil(text.length / CHUNK_EVENT_CHARS));
    await gh.close();
  });
});
