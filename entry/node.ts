/**
 * The demo on Node (`npm start`, the same as `gatehouse demo`): the two
 * example agents of examples/demo.ts served by startNode(), configured by
 * the environment (entry/config.ts; docs/operations.md). To serve your own
 * agents use `gatehouse serve ./agents.js` or startNode/serveNode from
 * `@gatehouse-runtime/core/node`.
 */
import { demoAgents } from "../examples/demo.ts";
import { startNode } from "./serve-node.ts";

await startNode({ agents: demoAgents });
