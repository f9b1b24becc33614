/**
 * What Redis' `appendfsync always` charges for two writes, awaited one after the other or sent in one
 * pipeline (one TCP write), against one write alone (`npx tsx bench/fsync-pipeline.ts`; bench/README.md,
 * "Task to done: the critical path of a lone task"). A private redis-server with the AOF on; 300 of each,
 * interleaved, 2 KB values (about a commit's size); prints the p50 of each.
 */
import { performance } from "node:perf_hooks";
import { Redis } from "ioredis";
import { startRedisServer } from "../tests/helpers/redis-server.ts";

const redis = await startRedisServer({ appendonly: true, appendfsync: "always" });
const c = new Redis(redis.url, { enableAutoPipelining: false });
const big = "x".repeat(2000);
const serial: number[] = [], piped: number[] = [], one: number[] = [];
for (let i = 0; i < 300; i++) {
  let t = performance.now();
  await c.set("a", big + i);
  await c.set("b", big + i);
  serial.push(performance.now() - t);
  t = performance.now();
  await c.pipeline().set("a", big + i).set("b", big + i).exec();
  piped.push(performance.now() - t);
  t = performance.now();
  await c.set("a", big + i);
  one.push(performance.now() - t);
}
const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(
  `two writes awaited in series p50 ${p50(serial).toFixed(2)} ms; the same two in one pipeline ${p50(piped).toFixed(2)} ms; one write ${p50(one).toFixed(2)} ms`,
);
c.disconnect();
await redis.stop();
