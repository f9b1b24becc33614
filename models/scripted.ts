/**
 * scriptedModel(): a deterministic model for demos and tests. Given an array,
 * step k of every turn gets response k (the last one repeats); given a
 * function, it is called with `{ agentId, turnId, step, messages }`.
 */
import { ModelError } from "../errors/errors.ts";
import type { Message } from "../common/message.ts";
import type { Model, ModelResponse } from "./types.ts";

export interface ScriptContext {
  agentId: string;
  turnId: string;
  step: number;
  /** The conversation the model sees (read-only: the host's messages are frozen). */
  messages: Message[];
}

export type Script = ModelResponse[] | ((ctx: ScriptContext) => ModelResponse | Promise<ModelResponse>);

/**
 * @example
 * const model = scriptedModel([
 *   { toolCalls: [{ name: "lookup", args: { email: "a@b.c" } }] },
 *   { toolCalls: [{ name: "submit_result", args: { result: "done" } }] },
 * ]);
 */
/** What a script function is given: the step's ids and the conversation. */
function scriptContext(req: Parameters<Model["generate"]>[0]): ScriptContext {
  return {
    agentId: req.agentId,
    turnId: req.turnId,
    step: req.step,
    // The host's messages are frozen; a fresh array is all a script needs (no deep copy per step).
    messages: req.messages.slice(),
  };
}

export function scriptedModel(script: Script): Model {
  if (!Array.isArray(script) && typeof script !== "function") {
    throw new TypeError("scriptedModel() takes an array of responses or a function");
  }
  if (Array.isArray(script) && script.length === 0) throw new TypeError("scriptedModel() needs at least one response");
  return {
    name: "scripted",
    async generate(req) {
      let res: ModelResponse;
      try {
        // A list is read by step; only a function is given the context (a copy of the conversation per step otherwise for nothing).
        res = Array.isArray(script) ? script[Math.min(req.step - 1, script.length - 1)] : await script(scriptContext(req));
      } catch (err) {
        if (err instanceof ModelError) throw err;
        throw new ModelError(`scripted model threw: ${(err as Error)?.message ?? String(err)}`, { cause: err });
      }
      if (!res || typeof res !== "object") throw new ModelError("scripted model returned no response", { retryable: false });
      const out = structuredClone(res);
      if (out.text && req.onChunk) {
        // Emit the text in word-sized chunks, as a streaming model would.
        for (const piece of out.text.match(/\S+\s*|\s+/g) ?? []) req.onChunk(piece);
      }
      return out;
    },
  };
}
