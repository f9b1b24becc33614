--[[
  get_verdict: one verdict record by id.

  KEYS[1] verdicts: verdicts hash
  ARGV[1] verdict_id: verdictId
  Returns: 'verdict <record text>' | 'none'
]]
-- reads only: writes nothing.
-- Arguments, named in the order of the header (described in store/script/side-stores.ts).
local verdicts = KEYS[1]
local verdict_id = ARGV[1]

local v = redis.call('HGET', verdicts, verdict_id)
if not v then
  return 'none'
end
return 'verdict ' .. v
