/** Pausing schedules and their task options on the memory store (tests/schedules/pause-suite.ts). */
import { memoryStore } from "../../mod.ts";
import { pauseSuite } from "./pause-suite.ts";

pauseSuite("memory", () => memoryStore());
