--[[
  put_verdict: write-once verdict record. Mirrors memoryStore.putVerdict: the
  record is kept under its id; the agent's list (for listVerdicts) grows only
  when the agent exists.

  KEYS[1] verdict_list: verdict list of the agent
  KEYS[2] head: head hash of the agent
  KEYS[3] verdicts: verdicts hash (verdictId -> record)
  ARGV[1] verdict_id: verdictId
  ARGV[2] entry: list entry JSON [verdictId, turnId, status]
  ARGV[3] record: record text (stored as given)
  Returns: 'written' | 'exists' (nothing changes)
]]
-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local verdict_list, head, verdicts = KEYS[1], KEYS[2], KEYS[3]
local verdict_id, entry, record = ARGV[1], ARGV[2], ARGV[3]

if redis.call('HEXISTS', verdicts, verdict_id) == 1 then
  return 'exists'
end

-- Checks done; writes follow.
redis.call('HSET', verdicts, verdict_id, record)
if redis.call('EXISTS', head) == 1 then
  redis.call('RPUSH', verdict_list, entry)
end
return 'written'
