/**
 * The demo on Deno (`deno run -A entry/deno.ts`): the example agents served
 * by startDeno(), configured by the environment like the Node entry.
 */
import { demoAgents } from "../examples/demo.ts";
import { startDeno } from "./serve-deno.ts";

await startDeno({ agents: demoAgents });
