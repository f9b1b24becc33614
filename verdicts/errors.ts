/** The one error of verdict records: `VerdictError` (errors/verdict.ts). */
export { VerdictError } from "../errors/verdict.ts";
export type { VerdictErrorCode } from "../errors/verdict.ts";
