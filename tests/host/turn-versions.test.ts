/** Turns pinned to their definition version on the memory store (tests/host/turn-versions-suite.ts). */
import { describe } from "vitest";
import { memoryStore } from "../../store/memory.ts";
import { turnVersionSuite } from "./turn-versions-suite.ts";

describe("turn versions (memory store)", () => {
  const store = memoryStore();
  turnVersionSuite(() => store, () => store);
});
