--[[
  The claim of one agent, shared by claim.lua and claim_next.lua. Mirrors
  doClaim in store/memory.ts step by step. Needs keys.lua and head.lua.

  k: { head, tasks, mail } keys of the agent.
  Returns: reply, status ('claimed' | 'busy' | 'empty'), leaseUntil (busy only).
  The claimed reply is `claimed {"epoch":n,"head":{...},"mail":[...]}`; the
  task of the turn is head.currentTask.
]]
local function claim_agent(prefix, agent_id, k, worker_json, lease_ms, now, now_str)
  local h = redis.call('HMGET', k.head, 'leaseOwner', 'leaseUntil', 'activeTurnId', 'runnableAt', 'workerTarget', 'epoch')
  local owner, lease_until, active, runnable_at = h[1], tonumber(h[2]), h[3], h[4]
  local ready = ready_key(prefix, h[5])

  -- Exclusive: an unexpired lease of anyone (this worker included) wins.
  if owner ~= 'null' and lease_until > now then
    return 'busy ' .. h[2], 'busy', lease_until
  end

  local mail_len = redis.call('LLEN', k.mail)
  local tasks_len = redis.call('LLEN', k.tasks)
  local claimable = mail_len > 0
    or (active == 'null' and tasks_len > 0)
    or (runnable_at ~= 'null' and tonumber(runnable_at) <= now)
  if not claimable then
    -- A bell with nothing behind it: forget the bell, keep a future wakeup.
    if runnable_at == 'null' then
      redis.call('ZREM', ready, agent_id)
    else
      redis.call('ZADD', ready, runnable_at, agent_id)
    end
    return 'empty', 'empty'
  end

  -- Checks done; writes follow.
  if active == 'null' and tasks_len > 0 then
    -- A task entry is `<turnId JSON>\n<task JSON>`; JSON text never holds a raw newline.
    local entry = redis.call('LPOP', k.tasks)
    local nl = string.find(entry, '\n', 1, true)
    redis.call('HSET', k.head,
      'activeTurnId', string.sub(entry, 1, nl - 1),
      'currentTask', string.sub(entry, nl + 1),
      'pendingTasks', int(tasks_len - 1),
      'runnableAt', now_str)
  end
  local epoch = tonumber(h[6]) + 1
  local until_str = int(now + lease_ms)
  redis.call('HSET', k.head, 'epoch', int(epoch), 'leaseOwner', worker_json, 'leaseUntil', until_str, 'updatedAt', now_str)
  -- Visibility timeout: if this worker dies, the agent is due again when the lease ends.
  redis.call('ZADD', ready, until_str, agent_id)

  local mail = redis.call('LRANGE', k.mail, 0, -1)
  local reply = 'claimed {"epoch":' .. int(epoch)
    .. ',"head":' .. head_json(k.head)
    .. ',"mail":' .. json_list(mail) .. '}'
  return reply, 'claimed'
end
