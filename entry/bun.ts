/**
 * The demo on Bun (`bun entry/bun.ts`): the example agents served by
 * startBun(), configured by the environment like the Node and Deno entries.
 *
 * Type-checked with Bun's own types by `tsc -p tsconfig.bun.json` (the main
 * tsconfig leaves this file out, as it leaves entry/deno.ts to Deno).
 */
import { demoAgents } from "../examples/demo.ts";
import { startBun } from "./serve-bun.ts";

await startBun({ agents: demoAgents });
