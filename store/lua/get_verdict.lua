--[[
  get_verdict: one verdict record by id.

  KEYS[1] verdicts hash
  ARGV[1] verdictId
  Returns: 'verdict <record text>' | 'none'
]]
-- reads only: writes nothing.
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then
  return 'none'
end
return 'verdict ' .. v
