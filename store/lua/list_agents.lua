--[[
  list_agents: one page of the agents index (`<prefix>:agents`, score =
  the head's updatedAt), newest first, ties by agent id descending. Reads
  only the index (a cross-agent key, like the ready queues): the heads are
  read by the caller, one get_agent per agent, so no script touches two
  agents' keys.

  KEYS[1] idx: agents zset
  ARGV[1] limit_text: limit (> 0)
  ARGV[2] since: updatedSince: only scores >= this ('-inf': all)
  ARGV[3] cursor_score: cursor score ('' : from the newest)
  ARGV[4] cursor_agent: cursor agentId (the last entry of the previous page)
  Returns: 'list [[agentId, updatedAt], ...]'
]]
-- reads only: writes nothing.
-- Arguments, named in the order of the header (described in store/script/reads.ts).
local idx = KEYS[1]
local limit_text, since, cursor_score, cursor_agent = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

local limit = tonumber(limit_text)
local out = {}
local max = '+inf'
if cursor_score ~= '' then
  local score, after = cursor_score, cursor_agent
  if since == '-inf' or tonumber(score) >= tonumber(since) then
    -- Ties at the cursor's score come in id order; take those below the cursor, highest first.
    local ties = redis.call('ZRANGEBYSCORE', idx, score, score)
    for i = #ties, 1, -1 do
      if #out >= limit then break end
      if ties[i] < after then out[#out + 1] = { ties[i], tonumber(score) } end
    end
  end
  max = '(' .. score
end
if #out < limit then
  local rest = redis.call('ZREVRANGEBYSCORE', idx, max, since, 'WITHSCORES', 'LIMIT', 0, limit - #out)
  for i = 1, #rest, 2 do out[#out + 1] = { rest[i], tonumber(rest[i + 1]) } end
end
if #out == 0 then
  return 'list []'
end
return 'list ' .. cjson.encode(out)
