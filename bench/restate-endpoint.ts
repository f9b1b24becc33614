/**
 * The Restate side of bench/restate.ts: the benchmark agent of bench/agent.ts written as a Restate
 * virtual object, served by the Restate TypeScript SDK over HTTP/2 in a process of its own (so its CPU
 * is read apart from restate-server's and from the driver's).
 *
 * One object per agent (`BenchAgent/<agent id>`), one handler call per turn (`turn`). A turn is the same
 * model steps as bench/agent.ts, `work({ n: 1 })`, `work({ n: 2 })`, `submit_result` (or, with `steps: 5`
 * in the call's body, four `work` calls and the result), and every model step and every tool call is one
 * `ctx.run` (the journaled side effect Restate replays instead of running again): five per turn of three
 * model steps and two tool calls, nine per turn of five and four. The conversation is the object's
 * state (`messages`), read at the turn's start and written at its end, as gatehouse keeps it.
 *
 * Run by bench/restate.ts with `node --import tsx` and an IPC channel: PORT is the port to listen on,
 * the parent is told `{ type: "listening", port }`, and `{ type: "steps" }` asks for the model steps run
 * so far (the count bench/agent.ts keeps). The SDK is loaded from bench/node_modules by path, so the
 * project type-checks without it; the few members used are typed here.
 */
import { createRequire } from "node:module";
import process from "node:process";

// Node 20 has no `Promise.withResolvers` (Node 22 does) and the SDK calls it: the standard polyfill,
// installed before the SDK is loaded.
const P = Promise as unknown as { withResolvers?: () => unknown };
if (typeof P.withResolvers !== "function") {
  P.withResolvers = function <T>() {
    let resolve!: (v: T | PromiseLike<T>) => void;
    let reject!: (e?: unknown) => void;
    const promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

interface ObjectContext {
  get<T>(name: string): Promise<T | null>;
  set<T>(name: string, value: T): void;
  run<T>(name: string, action: () => Promise<T>): Promise<T>;
}
interface RestateSdk {
  object(def: { name: string; handlers: Record<string, (ctx: ObjectContext, input: never) => Promise<unknown>> }): unknown;
  endpoint(): { bind(def: unknown): { listen(port?: number): Promise<number> } };
}

interface ToolCall {
  name: string;
  args: Record<string, unknown>;
}
/** The model's answers, step by step, for a turn of `steps` model steps: bench/agent.ts's benchScript. */
function script(steps: number): Array<{ toolCalls: ToolCall[]; usage: { inputTokens: number; outputTokens: number } }> {
  return [
    ...Array.from({ length: steps - 1 }, (_, i) => ({
      toolCalls: [{ name: "work", args: { n: i + 1 } }],
      usage: { inputTokens: 50 + 10 * i, outputTokens: 10 },
    })),
    { toolCalls: [{ name: "submit_result", args: { result: "ok" } }], usage: { inputTokens: 50 + 10 * (steps - 1), outputTokens: 5 } },
  ];
}
const SCRIPTS = new Map<number, ReturnType<typeof script>>();

interface Task {
  input: string;
  /** Each model step waits this long first, as a model call over the network does. */
  modelDelayMs: number;
  /** Model steps of the turn (default 3: two tool calls and the result). */
  steps?: number;
}
type Message = { role: "user"; content: string } | { role: "assistant"; toolCalls: ToolCall[] } | { role: "tool"; name: string; result: unknown };

const restate = createRequire(import.meta.url)("@restatedev/restate-sdk") as RestateSdk;
let steps = 0;

const benchAgent = restate.object({
  name: "BenchAgent",
  handlers: {
    turn: async (ctx: ObjectContext, task: Task) => {
      const messages = (await ctx.get<Message[]>("messages")) ?? [];
      messages.push({ role: "user", content: task.input });
      const n = task.steps ?? 3;
      if (!SCRIPTS.has(n)) SCRIPTS.set(n, script(n));
      const SCRIPT = SCRIPTS.get(n)!;
      for (let i = 0;; i++) {
        const step = await ctx.run("model", async () => {
          steps++;
          if (task.modelDelayMs > 0) await new Promise((r) => setTimeout(r, task.modelDelayMs));
          return SCRIPT[Math.min(i, SCRIPT.length - 1)];
        });
        messages.push({ role: "assistant", toolCalls: step.toolCalls });
        const call = step.toolCalls[0];
        if (call.name === "submit_result") {
          ctx.set("messages", messages);
          return call.args;
        }
        const result = await ctx.run("work", async () => ({ n: call.args.n }));
        messages.push({ role: "tool", name: call.name, result });
      }
    },
  },
});

const port = await restate.endpoint().bind(benchAgent).listen(Number(process.env.PORT ?? 9080));
process.send?.({ type: "listening", port });
process.on("message", (m: { type?: string }) => {
  if (m.type === "steps") process.send?.({ type: "steps", steps });
});
process.on("disconnect", () => process.exit(0));
