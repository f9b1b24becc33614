--[[
  put_verdict: write-once verdict record. Mirrors memoryStore.putVerdict: the
  record is kept under its id; the agent's list (for listVerdicts) grows only
  when the agent exists.

  KEYS[1] verdict list of the agent   KEYS[2] head hash of the agent
  KEYS[3] verdicts hash (verdictId -> record)
  ARGV[1] verdictId   ARGV[2] list entry JSON [verdictId, turnId, status]
  ARGV[3] record text (stored as given)
  Returns: 'written' | 'exists' (nothing changes)
]]
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then
  return 'exists'
end

-- Checks done; writes follow.
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('RPUSH', KEYS[1], ARGV[2])
end
return 'written'
