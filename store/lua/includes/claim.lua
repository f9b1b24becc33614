--[[
  The claim of one agent, shared by claim.lua and claim_next.lua. Mirrors
  doClaim in store/memory.ts step by step. Needs keys.lua, head.lua and queue.lua
  (a delayed task is taken only once due: store/port.ts invariant `delayed-tasks`).

  k: { head, tasks, delayed, mail, inputs } keys of the agent.
  only_ready: when set, an agent whose bell lives in another ready key is not
    claimed ('stale'); claim_next passes its own queue.
  known: the agent's { _ck, _cp, _ckRun } as agent_lane read them (nil: read here); known[4]: the
    caller places the lane after a claim (claim_next serves it), so the bell's move does not.
  limits: the decoded concurrency limits of the claim, or nil (includes/lanes.lua; status
    'limited' when the agent's key is at its limit: its lane is parked, nothing else written;
    on the sharded layout status 'need' with reply `need {"key":K,"ready":<ready key>}`: reserve in K's slot first).
  names: when set, a table whose keys are agentName JSON texts; a claimable
    agent of another name is not claimed and nothing is written ('foreign',
    store/port.ts invariant `definition-sets`). Busy and empty bells are maintained first.
    A key `<name JSON>\n<version JSON>` lists a version the caller has; when the
    caller lists any for a name (names[name] == 'versions'), an agent whose turn is
    pinned to another version is 'foreign' too (invariant `turn-versions`).
  Returns: reply, status, leaseUntil (busy only). status is 'claimed', 'busy',
  'empty', 'missing' (no such agent), 'stale', 'foreign' or 'error' (the head holds a
  number it cannot read, or marks a long value whose key is gone; reply is
  the error, nothing was written). Long values (the snapshot) are read from
  their keys (includes/head.lua). The claimed reply is
  `claimed {"epoch":n,"head":{...},"mail":[...],"previousLease":{...}|null,"input":...}`; the task of
  the turn is head.currentTask, its input (stored once, in the inputs hash)
  is `input`, absent for a task stored with its input inline.
]]
local function claim_agent(prefix, agent_id, k, worker_json, lease_ms, now, now_str, only_ready, names, limits, known)
  local h = read_head(k.head, HEAD_FIELDS)
  if not h then
    return 'agent_not_found', 'missing'
  end
  local ready = ready_key(prefix, h.workerTarget)
  if only_ready and ready ~= only_ready then
    return 'empty', 'stale'
  end

  -- Exclusive: an unexpired lease of anyone (this worker included) wins.
  local lease_until = tonumber(h.leaseUntil)
  if h.leaseOwner ~= 'null' and lease_until > now then
    return 'busy ' .. h.leaseUntil, 'busy', lease_until
  end

  -- Greedy batch: all pending mail, oldest first (read now, acknowledged by a later commit).
  local mail = redis.call('LRANGE', k.mail, 0, -1)
  local takes_task = h.activeTurnId == 'null' and task_due(k, now)
  local claimable = #mail > 0 or takes_task
    or (h.runnableAt ~= 'null' and tonumber(h.runnableAt) <= now)
  if not claimable then
    -- A bell with nothing behind it: forget the bell, keep a future wakeup (a delayed task's included).
    -- write before checks done: an empty claim drops the bell that rang for nothing, or moves it to the next wakeup
    rest_bell(ready, agent_id, h.runnableAt, h.activeTurnId == 'null', k, now)
    return 'empty', 'empty'
  end
  if names and not names[h.agentName] then
    return 'empty', 'foreign'
  end
  local pin = names and names[h.agentName] == 'versions' and pinned_version(h)
  if pin and not names[h.agentName .. '\n' .. pin] then
    return 'empty', 'foreign'
  end
  -- Invariant `concurrency-keys`: at its key's limit the agent is left as it is, its lane parked until a slot frees.
  local ck, cp, run
  if known then
    ck, cp, run = known[1], known[2], known[3]
  else
    ck, cp, run = agent_lane(ready, agent_id)
  end
  local full, member
  if limits and limits['\n'] then
    -- The sharded layout counts K in K's slot (includes/lanes.lua `slot_check`): the caller reserves first.
    local go
    -- write before checks done: a claim that needs a reservation parks its lane provisionally
    go, full = slot_check(ready, ck, limits, now, lease_ms)
    if go == 'need' then
      return 'need ' .. cjson.encode({ key = ck, ready = ready }), 'need'
    elseif go == 'limited' then
      return 'empty', 'limited', full
    end
    member, full = full, nil
  else
    -- write before checks done: the check prunes the leases that ran out under the key (they count for no one)
    full = ck and lane_full(prefix, ck, limits, now)
  end
  if full then
    -- write before checks done: a claim held back by the limit parks the lane until a slot frees
    park_lane(ready, ck, full)
    return 'empty', 'limited', full
  end

  local bad = check_numbers(h, { 'epoch', 'pendingTasks' })
  if bad then
    return bad, 'error'
  end
  bad = resolve_long(k.head, h, HEAD_FIELDS)
  if bad then
    return bad, 'error'
  end

  -- The lease this claim takes over (read before the writes; the reply only).
  local previous = 'null'
  if h.leaseOwner ~= 'null' then
    previous = '{"workerId":' .. h.leaseOwner .. ',"leaseUntil":' .. int(lease_until)
      .. ',"updatedAt":' .. int(tonumber(h.updatedAt) or 0) .. '}'
  end

  -- Checks done; writes follow.
  if takes_task then
    -- A task entry is `<turnId JSON>\n<task JSON>`; JSON text never holds a raw newline.
    local entry = pop_task(k)
    local nl = string.find(entry, '\n', 1, true)
    h.activeTurnId = string.sub(entry, 1, nl - 1)
    h.currentTask = string.sub(entry, nl + 1)
    h.pendingTasks = int(tonumber(h.pendingTasks) - 1)
    h.runnableAt = now_str
    -- The turn reads `running` from its claim on; the rest of its start rides with the first commit (invariant `turn-start`).
    h.state = '"running"'
  end
  h.epoch = int(tonumber(h.epoch) + 1)
  h.leaseOwner = worker_json
  h.leaseUntil = int(now + lease_ms)
  h.updatedAt = now_str
  local w = { 'epoch', h.epoch, 'leaseOwner', h.leaseOwner, 'leaseUntil', h.leaseUntil, 'updatedAt', h.updatedAt }
  if takes_task then
    -- Only a new task changes these (a long currentTask goes to its key: includes/head.lua).
    w[#w + 1] = 'activeTurnId'; w[#w + 1] = h.activeTurnId
    w[#w + 1] = 'currentTask'; w[#w + 1] = h.currentTask
    w[#w + 1] = 'pendingTasks'; w[#w + 1] = h.pendingTasks
    w[#w + 1] = 'runnableAt'; w[#w + 1] = h.runnableAt
    w[#w + 1] = 'state'; w[#w + 1] = h.state
  end
  -- The lease's key (includes/lanes.lua run_under) rides with the head's write.
  if ck then w[#w + 1] = '_ckRun'; w[#w + 1] = run_value(ck, member) end
  set_head(k.head, w, h)
  redis.call('ZADD', agents_key(prefix), now_str, agent_id)
  -- Visibility timeout: if this worker dies, the agent is due again when the lease ends.
  set_bell(ready, h.leaseUntil, agent_id, nil, nil, { ck, cp, known and known[4] })
  run_under(prefix, k.head, agent_id, ck, h.leaseUntil, run, member, true)

  local input = ''
  if h.currentTask ~= 'null' then
    local turn = decode_stored(h.activeTurnId)
    local raw = type(turn) == 'string' and redis.call('HGET', k.inputs, turn)
    if raw then
      input = ',"input":' .. raw
    end
  end
  return 'claimed {"epoch":' .. h.epoch .. ',"head":' .. head_json(h) .. ',"mail":' .. json_list(mail) .. ',"previousLease":' .. previous .. input .. '}', 'claimed'
end
