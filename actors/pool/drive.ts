/**
 * A drive: the worker pool's work done in one bounded piece, for runtimes
 * with no process that lives on (Cloudflare Workers, `workers.ts`). Where
 * the pool's loops run until stopped, a drive runs inside one invocation,
 * within a drive budget (steps and wall time, actors/spend/budget.ts), and
 * says whether it stopped with work left.
 *
 * Invariants:
 * - One driver. A drive claims with the pool's own claim attempt on a
 *   target (`claimTarget`, actors/pool/claim-runner.ts: `claimNext` with
 *   this process's definitions, a due schedule fired, a claimed agent run)
 *   and runs every claim through the same `claimRunner`
 *   (actors/pool/claim-failure.ts: poison handling, turn chaining, the
 *   `turn_end` line). Nothing of a claim runs another way on Workers.
 * - Bounded. The budget is checked before every claim and at every step
 *   boundary inside one (the hand-back: the commit that ends the step
 *   releases the lease, due at once); a drive never leaves an agent under a
 *   lease except while a step runs. It answers true only when the budget
 *   stopped it with work left (a rung agent handed back, or a pass over the
 *   targets that still found work).
 * - Order of a drive: when any due agent may be driven (`any`: a watchdog
 *   tick, a cron run), a tick firer pass first (actors/pool/tick-firer.ts:
 *   every due schedule tick enqueued before any turn runs, `liveFrom` the
 *   start of the drive); then each rung agent (`claim` by id, driven again
 *   while it hands back at the budget); then, with `any`, passes over every
 *   target, each claiming at most one agent per target, until a pass finds
 *   nothing (targets take turns, none starves the others).
 * - A drive never throws: a store outage mid-drive is logged (`drive
 *   failed`) and answers false (the lease of the claim it held expires; the
 *   next drive or the cron goes on). Whatever happened, it ends by writing
 *   the tool registry's batched call counts (actors/registry/writer.ts: no
 *   timer outlives an invocation).
 * - Worker ids: each drive claims as `<workerId>/d<n>`, n counting the
 *   drives of this driver, so two drives of one isolate never share a lease
 *   owner.
 */
