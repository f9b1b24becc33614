--[[
  commit: the compare-and-set of one step. Mirrors memoryStore.commit step by
  step: every check comes before the first write (Redis has no rollback), then
  tool calls, mail acknowledgement, messages and events are appended and the
  head is updated. The head never carries history.

  KEYS[1] head: head hash
  KEYS[2] tasks_key: tasks list
  KEYS[3] mail_key: mail list
  KEYS[4] msgs_key: messages list
  KEYS[5] events_key: events list
  KEYS[6] calls_key: calls hash of the turn
  KEYS[7] deadlines_key: deadlines zset
  KEYS[8] turns_key: turns hash
  KEYS[9] ckpts_key: ckpts list
  KEYS[10] ended_key: ended list
  KEYS[11] inputs_key: inputs hash
  KEYS[12] idem_key: idem hash
  KEYS[13] summary_key: summary string
  KEYS[14] delayed_key: delayed zset (includes/queue.lua)
  KEYS[15..] long_keys: the keys of the head's long values (includes/head.lua)
      On the sharded layout (Redis Cluster) every key is declared, so a slot
      migration answers TRYAGAIN. On one Redis (and Upstash) only KEYS[1] is
      given: the script builds the others from the home prefix and the agent
      id like store/keys.ts does (includes/keys.lua), 13 key names fewer per
      call.
  ARGV[1] prefix: home prefix of the agent (store/keys.ts)
  ARGV[2] agent_id: agentId (raw)
  ARGV[3] worker_json: workerId JSON
  ARGV[4] epoch: epoch
  ARGV[5] expected_version: expectedVersion
  ARGV[6] turn_json: turnId JSON ('null' when none)
  ARGV[7] turn_id: turnId (raw, '' when none)
  ARGV[8] next_active: activeTurnId JSON after the commit ('null': the turn ended)
  ARGV[9] snapshot: snapshot JSON
  ARGV[10] state: state JSON
  ARGV[11] ack_text: ackMailThrough
  ARGV[12] release: release: '-' keep the lease; 'null' release, runnable on mail only; or runnableAt
  ARGV[13] lease_ms_text: leaseMs
  ARGV[14] now_str: now
  ARGV[15] n_rec_text: number of tool calls to record (R)
  ARGV[16] n_res_text: number of tool calls to resolve (S)
  ARGV[17] n_msg_text: number of messages (M)
  ARGV[18] n_ev_text: number of events (E)
  ARGV[19..] tail: R x (toolCallId, record JSON without status, deadline: the
       deadline, or `<deadline>\n<event name>` for a call waiting for a named
       event, indexed in `<home>:waits:<name>` at now: store/port.ts
       invariant `named-event-waits`),
       S x (toolCallId, resolution JSON),
       M x message JSON,
       E x event tail ({type, data} JSON without its opening brace),
       the JSON texts (records, resolutions, messages, event tails) packed
       with the wire codes (includes/wire.lua): unwired before use,
       then retention: '' (keep everything) or
         '<maxEvents> <maxEventBytes> <maxTurns> <checkpointEvery>',
       then the summary: '' (unchanged) or `{content, through}` JSON,
       then chain: '1' to take the next queued task when the turn ends
         (invariant `turn-chaining`), else '',
       then stop at cancel: '1' to refuse while a cancel of the active turn
         is pending beyond ackMailThrough (invariant `firm-cancels`), else '',
       then the concurrency limits a chained claim keeps, JSON ('' or absent: none;
         invariant `concurrency-keys`: a next task whose key is at its limit is not chained;
         the sharded layout's mark "\n" chains a limited key only on the ended turn's reservation,
         includes/lanes.lua `chain_slot`)
       then the turn's pin: '' or `<turnId JSON>\n<version JSON>`, written to
         the head's versionTurn and turnVersion (invariant `turn-versions`),
       then, on the sharded layout only, the reservation member the caller renewed first
         ('' none; includes/lanes.lua `slot_unrenewed`)
  Events carry the commit's turnId, else activeTurnId. The replay guard's
  token is `<epoch>:<expectedVersion>:<now>:<workerId JSON>`, built here.
  Undeclared keys: on one Redis, the agent's keys listed under KEYS[1]; the
  ready zset of the agent's stored target and its lane keys, the running sets of
  the agent's keys (includes/lanes.lua); the waits zsets of named events; the calls hashes of ended turns
  that retention drops; on one Redis, the keys of the head's long values
  (the snapshot, a long currentTask: includes/head.lua). All are the
  agent's (its hash tag) or its home's.

  Publishes, once applied: '{"type":"grew","lastEventId":n}' on the agent's
  live channel (`<home>:{a:<agentId>}:live`, store/live.ts), so readers in
  every process wake without a command of the worker's own.

  Returns:
    'applied {"version":n,"lastEventId":n,"messagesTrimmedThrough":n}'
    'applied {...,"chained":{"epoch":n,"head":{...},"mail":[],"previousLease":null,"input":...}}'
      when the commit ended the turn and took the next task (turn chaining)
    with `,"ckFreed":"<K>\n<member>"` before the closing brace when it released a reservation
      of the sharded layout (includes/lanes.lua), the refusals below with ` {"ckFreed":...}`
    'fenced' | 'version' | 'turn' | 'agent_not_found'  (nothing written)
    'slot {"ckHeld":"<K>\n<member>"}'  (sharded layout: the lease would go on under a reservation not
                           renewed first in its key's slot; nothing written)
    'tool_call_resolved'  (nothing of the commit written; the lease is
                           released and the bell rung so the result is picked up)
    'cancel_pending'      (stop at cancel: a cancel of the active turn waits;
                           nothing written, lease released, bell rung)
  Replay guard: a commit whose token matches the last applied commit while
  the version is still expectedVersion + 1 is a replay of an applied call; it
  answers 'applied' with the same numbers and writes nothing.
]]
-- @include keys.lua
-- @include head.lua
-- @include queue.lua
-- @include lanes.lua
-- @include retention.lua
-- @include wire.lua

-- Arguments, named in the order of the header (encoded by store/lua/args/turn-protocol.ts).
local head, tasks_key, mail_key, msgs_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local events_key, calls_key, deadlines_key, turns_key = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local ckpts_key, ended_key, inputs_key, idem_key = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local summary_key, delayed_key = KEYS[13], KEYS[14]
local prefix, agent_id, worker_json, epoch = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local expected_version, turn_json, turn_id, next_active = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local snapshot, state, ack_text, release = ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local lease_ms_text, now_str, n_rec_text, n_res_text = ARGV[13], ARGV[14], ARGV[15], ARGV[16]
local n_msg_text, n_ev_text = ARGV[17], ARGV[18]

local expected = tonumber(expected_version)
local ack = tonumber(ack_text)
local lease_ms = tonumber(lease_ms_text)
local now = tonumber(now_str)
local n_rec, n_res, n_msg, n_ev = tonumber(n_rec_text), tonumber(n_res_text), tonumber(n_msg_text), tonumber(n_ev_text)
local rec_at = 19
local event_turn = turn_json ~= 'null' and turn_json or next_active
local token = epoch .. ':' .. expected_version .. ':' .. now_str .. ':' .. worker_json
-- The key given when declared (the sharded layout), else built as store/keys.ts names it.
local function key(given, suffix) return given or agent_key(prefix, agent_id, suffix) end
local tasks, mail, msgs, events, calls = key(tasks_key, 'tasks'), key(mail_key, 'mail'), key(msgs_key, 'msgs'), key(events_key, 'events'), key(calls_key, 'calls:' .. turn_id)
local deadlines, turns = deadlines_key or (prefix .. ':deadlines'), key(turns_key, 'turns')
local rk = { events = events, msgs = msgs, ckpts = key(ckpts_key, 'ckpts'), ended = key(ended_key, 'ended'), turns = turns, inputs = key(inputs_key, 'inputs'), idem = key(idem_key, 'idem') }
summary_key = key(summary_key, 'summary')
local q = { tasks = tasks, delayed = key(delayed_key, 'delayed') }
local res_at = rec_at + 3 * n_rec
local msg_at = res_at + 2 * n_res
local ev_at = msg_at + n_msg
local retention, summary = ARGV[ev_at + n_ev] or '', ARGV[ev_at + n_ev + 1] or ''
local chain = ARGV[ev_at + n_ev + 2] == '1'
local stop_at_cancel = ARGV[ev_at + n_ev + 3] == '1'
local limits_json = ARGV[ev_at + n_ev + 4] or ''
local pin = ARGV[ev_at + n_ev + 5] or ''
local held = ARGV[ev_at + n_ev + 6]

local num = function(v) return tonumber(v) or 0 end

-- The `chained` part of the reply: the claim of the task `turn` (JSON) that this commit took.
local function chained_reply(turn)
  local hh = read_head(head, HEAD_FIELDS)
  resolve_long(head, hh, HEAD_FIELDS)
  local input = ''
  local id = decode_stored(turn)
  local raw = type(id) == 'string' and redis.call('HGET', rk.inputs, id)
  if raw then
    input = ',"input":' .. raw
  end
  return ',"chained":{"epoch":' .. hh.epoch .. ',"head":' .. head_json(hh) .. ',"mail":[],"previousLease":null' .. input .. '}'
end
local h = read_head(head, {
  'agentId', 'epoch', 'leaseOwner', 'leaseUntil', 'version', 'activeTurnId', 'workerTarget',
  'lastEventId', 'messageCount', '_mailSeq', '_commit', '_commitEvent', 'currentTask',
  'eventsTrimmedThrough', 'messagesTrimmedThrough', '_ckpts', '_evBytes', '_ended', '_endedBase',
  'pendingTasks', '_cancelSeq', '_cancelTurn', '_ck', '_cp', '_ckRun',
})
-- The lane fields (includes/lanes.lua), raw: absent on keyless agents.
local lane_cur = { (h and h._ck ~= '' and h._ck) or nil, h and tonumber(h._cp) or 0 }
local run_cur = (h and h._ckRun and h._ckRun ~= '') and h._ckRun or false
if not h then
  return 'agent_not_found'
end
local version = tonumber(h.version)
if h._commit == token and version == expected + 1 then
  -- A replayed chaining commit answers the same claim while this worker still holds it.
  local again = ''
  if chain and h.activeTurnId ~= next_active and h.activeTurnId ~= 'null' and h.leaseOwner == worker_json
    and tonumber(h.epoch) == tonumber(epoch) + 1 then
    again = chained_reply(h.activeTurnId)
  end
  return 'applied {"version":' .. h.version .. ',"lastEventId":' .. h._commitEvent ..
    ',"messagesTrimmedThrough":' .. int(num(h.messagesTrimmedThrough)) .. again .. '}'
end
if h.epoch ~= epoch or h.leaseOwner ~= worker_json or tonumber(h.leaseUntil) <= now then
  return 'fenced'
end
if version ~= expected then
  return 'version'
end
if h.activeTurnId ~= turn_json then
  return 'turn'
end
-- The sharded layout: a lease kept or chained on a reservation is renewed in its key's slot first (includes/lanes.lua).
local want = (release == '-' or chain) and slot_unrenewed(head, held, run_cur)
if want then
  return 'slot {"ckHeld":' .. cjson.encode(want) .. '}'
end
local ready = ready_key(prefix, h.workerTarget)
-- Numbers of the head are read before the first write: an unreadable head fails the commit whole.
local bad = check_numbers(h, { '_mailSeq', 'lastEventId', 'messageCount' })
if bad then
  return bad
end
for i = 0, n_res - 1 do
  local id = ARGV[res_at + 2 * i]
  local call = redis.call('HMGET', calls, 'c:' .. id, 'r:' .. id)
  if not call[1] or call[2] then
    -- The watchdog (or an HTTP delivery) resolved it first: give the agent
    -- back at once so a worker picks up the result that won.
    -- write before checks done: this refusal releases the lease (nothing of the commit is written)
    redis.call('HSET', head, 'leaseOwner', 'null', 'leaseUntil', '0')
    -- write before checks done: and frees the lease's slot under its key (invariant `concurrency-keys`)
    release_run(prefix, head, agent_id, ready, now_str, run_cur)
    -- write before checks done: and rings the bell so the result that won is picked up
    set_bell(ready, now_str, agent_id, nil, true, lane_cur)
    return 'tool_call_resolved' .. freed_tail()
  end
end
if stop_at_cancel and h._cancelTurn and h._cancelTurn == h.activeTurnId then
  -- The latest cancel is aimed at this turn; still pending when its seq is in the mail list (acks remove a prefix).
  local cancel_seq = tonumber(h._cancelSeq) or 0
  local first_pending = (tonumber(h._mailSeq) or 0) - redis.call('LLEN', mail) + 1
  if cancel_seq > ack and cancel_seq >= first_pending then
    -- write before checks done: this refusal releases the lease (nothing of the commit is written)
    redis.call('HSET', head, 'leaseOwner', 'null', 'leaseUntil', '0')
    -- write before checks done: and frees the lease's slot under its key (invariant `concurrency-keys`)
    release_run(prefix, head, agent_id, ready, now_str, run_cur)
    -- write before checks done: and rings the bell so a claim applies the cancel
    set_bell(ready, now_str, agent_id, nil, true, lane_cur)
    return 'cancel_pending' .. freed_tail()
  end
end

-- Retention numbers: absent on heads written before retention existed (0 then).
local ends_turn = next_active == 'null' and h.activeTurnId ~= 'null'
-- The commit leaves a turn running (read before a chained claim sets the next one): no turn ended in it.
local keeps_turn = next_active ~= 'null'
-- The turn this commit ends (its JSON), named in the notice below.
local ended_turn_json = ends_turn and h.activeTurnId or nil
local limits = nil
if ends_turn and retention ~= '' then
  local a, b, c, d = string.match(retention, '^([1-9]%d*) ([1-9]%d*) ([1-9]%d*) ([1-9]%d*)$')
  if not a then
    return redis.error_reply('unreadable retention argument ' .. retention)
  end
  limits = { max_events = tonumber(a), max_bytes = tonumber(b), max_turns = tonumber(c), every = tonumber(d) }
end
local ended_idem = ''
if ends_turn then
  local bad_task = resolve_long(head, h, { 'currentTask' })
  if bad_task then
    return bad_task
  end
end
if ends_turn and h.currentTask ~= 'null' then
  local task = decode_stored(h.currentTask)
  if type(task) == 'table' and type(task.idempotencyKey) == 'string' then ended_idem = task.idempotencyKey end
end

-- Checks done; writes follow.
local member_prefix = agent_id .. '\n' .. turn_id .. '\n'
if n_rec > 0 then
  local fields, stale, scores = {}, {}, {}
  for i = 0, n_rec - 1 do
    local id = ARGV[rec_at + 3 * i]
    fields[#fields + 1] = 'c:' .. id
    fields[#fields + 1] = unwire(ARGV[rec_at + 3 * i + 1])
    -- Recording a call again starts it over as pending (and undecided).
    stale[#stale + 1] = 'r:' .. id
    stale[#stale + 1] = 'a:' .. id
    local deadline = ARGV[rec_at + 3 * i + 2]
    local nl = string.find(deadline, '\n', 1, true)
    if nl then
      -- A call waiting for a named event: indexed by the name, scored by when it began to wait.
      redis.call('ZADD', prefix .. ':waits:' .. string.sub(deadline, nl + 1), now_str, member_prefix .. id)
      deadline = string.sub(deadline, 1, nl - 1)
    end
    scores[#scores + 1] = deadline
    scores[#scores + 1] = member_prefix .. id
  end
  redis.call('HSET', calls, unpack(fields))
  redis.call('HDEL', calls, unpack(stale))
  redis.call('ZADD', deadlines, unpack(scores))
end
if n_res > 0 then
  local fields, members = {}, {}
  for i = 0, n_res - 1 do
    local id = ARGV[res_at + 2 * i]
    fields[#fields + 1] = 'r:' .. id
    fields[#fields + 1] = unwire(ARGV[res_at + 2 * i + 1])
    members[#members + 1] = member_prefix .. id
  end
  redis.call('HSET', calls, unpack(fields))
  redis.call('ZREM', deadlines, unpack(members))
end

local pending_mail = redis.call('LLEN', mail)
if ack > 0 and pending_mail > 0 then
  -- Mail seqs are dense and ascending (every push takes the next seq, acks
  -- only remove a prefix), so the list holds seqs mailSeq-len+1 .. mailSeq.
  local first = tonumber(h._mailSeq) - pending_mail + 1
  local drop = math.min(pending_mail, ack - first + 1)
  if drop > 0 then
    redis.call('LTRIM', mail, drop, -1)
    pending_mail = pending_mail - drop
  end
end

local message_count = tonumber(h.messageCount)
if n_msg > 0 then
  local items = {}
  for i = 0, n_msg - 1 do items[i + 1] = unwire(ARGV[msg_at + i]) end
  push_all(msgs, items)
  message_count = message_count + n_msg
end

local tails = {}
for i = 0, n_ev - 1 do tails[i + 1] = unwire(ARGV[ev_at + i]) end
local last_event, ev_bytes = append_events(events, tonumber(h.lastEventId), event_turn, now_str, tails)
ev_bytes = num(h._evBytes) + ev_bytes

version = version + 1
redis.call('ZADD', agents_key(prefix), now_str, agent_id)
local w = {
  'snapshot', snapshot, 'state', state, 'version', int(version), 'updatedAt', now_str,
  'messageCount', int(message_count), 'pendingMail', int(pending_mail), 'lastEventId', int(last_event),
  'activeTurnId', next_active, '_commit', token, '_commitEvent', int(last_event), '_evBytes', int(ev_bytes),
}
if pin ~= '' then
  local nl = string.find(pin, '\n', 1, true)
  w[#w + 1] = 'versionTurn'; w[#w + 1] = string.sub(pin, 1, nl - 1)
  w[#w + 1] = 'turnVersion'; w[#w + 1] = string.sub(pin, nl + 1)
end
if summary ~= '' then
  redis.call('SET', summary_key, summary)
end
if ends_turn then
  -- The turn ended: its unresolved calls can no longer be answered.
  local all = redis.call('HGETALL', calls)
  local resolved, open = {}, {}
  for i = 1, #all, 2 do
    local kind, id = string.sub(all[i], 1, 2), string.sub(all[i], 3)
    if kind == 'r:' then resolved[id] = true elseif kind == 'c:' then open[#open + 1] = id end
  end
  local members = {}
  for _, id in ipairs(open) do
    if not resolved[id] then members[#members + 1] = member_prefix .. id end
  end
  if #members > 0 then
    redis.call('ZREM', deadlines, unpack(members))
  end
  -- Where the turn ended, for getTurn and for cancels naming it.
  local final = 'ended'
  if state == '"done"' then final = 'done' elseif state == '"failed"' then final = 'failed' end
  redis.call('HSET', turns, turn_id, final)
  w[#w + 1] = 'currentTask'
  w[#w + 1] = 'null'
  -- The turn joins the ended list; retention may drop the oldest (includes/retention.lua).
  local ended = num(h._ended) + 1
  redis.call('RPUSH', rk.ended, turn_id .. '\n' .. ended_idem .. '\n' .. int(message_count))
  w[#w + 1] = '_ended'
  w[#w + 1] = int(ended)
  if limits then
    local pairs_ = retain(prefix, agent_id, rk, {
      trimmed = num(h.eventsTrimmedThrough), msg_trimmed = num(h.messagesTrimmedThrough), last = last_event,
      bytes = ev_bytes, ended = ended, ended_base = num(h._endedBase), marks = parse_marks(h._ckpts),
      messages = message_count,
    }, limits, snapshot, now_str)
    for i = 1, #pairs_ do w[#w + 1] = pairs_[i] end
  end
end

local chained = ''
local next_ck = nil
-- This commit tries to chain the next task (invariant `turn-chaining`), its key's limit permitting.
local chain_try = chain and ends_turn and release ~= '-' and pending_mail == 0 and task_due(q, now)
-- A chain under the key the ended turn ran under keeps its slot (one Redis, includes/lanes.lua): the
-- running set's member and `_ckRun` stay, the chain moves the member's score to its lease end; a
-- chain refused at the limit releases it below. No slot frees, so no lane rings.
local keep_run = false
if ends_turn then
  -- A keyless queue behind a keyless agent is never decoded (first_lane reads no entry's JSON). Every
  -- branch below sets or drops the bell (set_bell, rest_bell), so a bell only leaves the old lane here.
  lane_cur = relane_idle(ready, agent_id, head, q, lane_cur, true)
  next_ck = lane_cur[1]
  keep_run = chain_try and run_cur ~= false and run_cur == next_ck
  if not keep_run then
    -- The ended turn's slot frees; the agent's lane is its next task's (includes/lanes.lua).
    release_run(prefix, head, agent_id, ready, now_str, run_cur)
    run_cur = false
  end
end
-- A next task whose key is at its limit is not chained: the lease is released, the lane parked (invariant `concurrency-keys`).
local chain_full, carried = nil, nil
if chain then
  chain_full, carried = chain_slot(prefix, ready, next_ck, (limits_json ~= '') and cjson.decode(limits_json) or nil, now, keep_run and agent_id)
end
if keep_run and chain_full then
  -- Refused at the limit: the ended turn's slot frees (its release rings the lane), then the lane parks again.
  release_run(prefix, head, agent_id, ready, now_str, run_cur)
  run_cur = false
  park_lane(ready, next_ck, chain_full)
end
if chain_try and not chain_full then
  -- Turn chaining (invariant `turn-chaining`): this commit claims the next task, as includes/claim.lua does; the lease stays.
  local entry = pop_task(q)
  local nl = string.find(entry, '\n', 1, true)
  local next_turn = string.sub(entry, 1, nl - 1)
  local until_str = int(now + lease_ms)
  for i = 1, #w - 1, 2 do
    if w[i] == 'activeTurnId' then w[i + 1] = next_turn end
    if w[i] == 'currentTask' then w[i + 1] = string.sub(entry, nl + 1) end
    -- The next turn reads `running` from this claim on (invariant `turn-start`).
    if w[i] == 'state' then w[i + 1] = '"running"' end
  end
  w[#w + 1] = 'pendingTasks'; w[#w + 1] = int(math.max(0, num(h.pendingTasks) - 1))
  w[#w + 1] = 'epoch'; w[#w + 1] = int(tonumber(h.epoch) + 1)
  w[#w + 1] = 'runnableAt'; w[#w + 1] = now_str
  w[#w + 1] = 'leaseUntil'; w[#w + 1] = until_str
  set_head(head, w, h)
  set_bell(ready, until_str, agent_id, nil, nil, lane_cur)
  if keep_run then
    redis.call('ZADD', running_key(prefix, next_ck), until_str, agent_id)
  else
    run_under(prefix, head, agent_id, next_ck, until_str, false, carried)
  end
  if carried then ck_freed = nil end
  chained = chained_reply(next_turn)
elseif release ~= '-' then
  w[#w + 1] = 'leaseOwner'; w[#w + 1] = 'null'
  w[#w + 1] = 'leaseUntil'; w[#w + 1] = '0'
  w[#w + 1] = 'runnableAt'; w[#w + 1] = release
  set_head(head, w, h)
  release_run(prefix, head, agent_id, ready, now_str, run_cur)
  local claimable = pending_mail > 0
    or (release ~= 'null' and tonumber(release) <= now)
    or (next_active == 'null' and task_due(q, now))
  if claimable then
    -- Mail arrived during the claim (or a task waits): ring again now.
    set_bell(ready, now_str, agent_id, nil, true, lane_cur)
  else
    -- The next wakeup, or a delayed task's runAt (invariant `delayed-tasks`); none: no bell.
    rest_bell(ready, agent_id, release, next_active == 'null', q, now)
  end
else
  local until_str = int(now + lease_ms)
  w[#w + 1] = 'runnableAt'; w[#w + 1] = now_str
  w[#w + 1] = 'leaseUntil'; w[#w + 1] = until_str
  set_head(head, w, h)
  set_bell(ready, until_str, agent_id, nil, nil, lane_cur)
  -- The lease goes on: so does its slot under its key (invariant `concurrency-keys`).
  if run_cur then redis.call('ZADD', running_key(prefix, run_key(run_cur)), 'XX', until_str, agent_id) end
end
local msg_trimmed = num(h.messagesTrimmedThrough)
for i = 1, #w - 1, 2 do
  if w[i] == 'messagesTrimmedThrough' then msg_trimmed = tonumber(w[i + 1]) end
end
-- The agent's live channel (store/live.ts `liveChannelName`: the head key with `:live` for `:head`):
-- event streams and `Prefer: wait` requests in every process wake on it, with no command of its own.
-- A commit that leaves a turn running appended no turn's end: `"turnEnded":false` tells the requests
-- waiting for one that they need not read the log; one that ends its turn names it (`endedTurn`), so
-- requests waiting for another turn need not either (store/live.ts `LiveGrew`).
-- A server that refuses PUBLISH in a script still commits (pcall).
redis.pcall('PUBLISH', string.sub(head, 1, -6) .. ':live', '{"type":"grew","lastEventId":' .. int(last_event) ..
  (keeps_turn and ',"turnEnded":false}' or (ended_turn_json and (',"endedTurn":' .. ended_turn_json .. '}') or '}')))
return 'applied {"version":' .. int(version) .. ',"lastEventId":' .. int(last_event) ..
  ',"messagesTrimmedThrough":' .. int(msg_trimmed) .. chained .. freed_json() .. '}'
