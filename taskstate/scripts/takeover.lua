-- takeover.lua: look at a task of the held index that is due: mcpq, not
-- asynq's lease, decides when a delivery is lost. A delivery whose
-- heartbeat is older than lost-after is taken back: the task gets a new job
-- sequence number (the caller enqueues that job; a late delivery of the old
-- job then claims nothing) and the old attempt is fenced off at once. A
-- task whose cancel was acknowledged more than the cancel grace ago ends
-- "cancelled" (its worker did not end it: gone, or not listening). After
-- max-lost lost deliveries the task ends "failed" instead of running again.
-- A task taken back also leaves the running set of its queue (free_slot), so
-- its principal's share counts only live deliveries.
-- KEYS[1] task hash   KEYS[2] the owner's live index   KEYS[3] the owner's held index
-- KEYS[4] the owner's account   KEYS[5] the owner's holds   KEYS[6] the owner's ledger
-- ARGV[1] now (unix ms)   ARGV[2] lost-after (ms)   ARGV[3] cancel grace (ms)
-- ARGV[4] max lost deliveries   ARGV[5] events channel   ARGV[6] task id
-- ARGV[7] stops channel   ARGV[8] '1' to take back lost deliveries ('0': only
-- end overdue cancels; the caller could not tell a lost worker from its own
-- lost view of Redis)   ARGV[9] the worker whose lease ARGV[10] is (unix ms of
-- its last renewal, lease.go; '0' when it has none)
-- A delivery is lost only when its worker is: a task whose heartbeat is old
-- but whose worker (the record's 'worker', claim.lua) renewed its lease
-- within lost-after is kept, and looked at again when that lease would be
-- lost-after old. A worker renews its lease apart from any task, so a task
-- heartbeat that did not get through a Redis outage costs nothing. When
-- ARGV[9] does not name the task's worker, {HELD, worker} asks the caller
-- to run the script again with that worker's lease.
-- A task waiting for input with its delivery ('waiter', input.lua) is held
-- as a working one is; taken back, its pending requests are dropped (each
-- key kept as 'gone:', never issued again) and it is working again: the
-- requests belonged to the lost delivery (an upstream call, say).
-- A task that ends here has its record rebuilt compact (prelude end_task(), compact():
-- long values move to its companion KEYS[1]..':x', Keys.TaskExtra).
-- Returns {OK, seq, lost, heartbeat, tool}: taken back; enqueue job seq. {CANCELLED}
-- or {LIMIT, lost, heartbeat} (ended "failed": the caller writes nothing
-- more); either way the reservation settled (failed releases it), and when
-- there was one its receipt and tool follow (settled.go). {ILLEGAL}: nothing to do (not held any more: dropped from the index;
-- or not due yet: re-indexed at its due time). {NOT_FOUND}, {EXPIRED}
-- (dropped from the index; the reaper ends an expired task).
local f = redis.call('HMGET', KEYS[1], 'status', 'createdAt', 'ttlMs', 'running', 'heartbeat', 'cancel',
  'cancelAt', 'lost', 'tool', 'worker', 'waiter')
local id, now = ARGV[6], tonumber(ARGV[1])
if not f[1] then redis.call('ZREM', KEYS[3], id); return {NOT_FOUND} end
if expired(f[2], f[3], ARGV[1]) then redis.call('ZREM', KEYS[3], id); return {EXPIRED} end
local waiting = f[1] == 'input_required' and f[11]
if (f[1] ~= 'working' and not waiting) or not f[4] or f[4] == '0' then redis.call('ZREM', KEYS[3], id); return {ILLEGAL} end
local beat = tonumber(f[5] or '0')
local due = beat + tonumber(ARGV[2])
if f[6] == '1' then due = math.min(due, tonumber(f[7] or '0') + tonumber(ARGV[3])) end
if now < due then redis.call('ZADD', KEYS[3], due, id); return {ILLEGAL} end
if f[6] == '1' then
  if not allowed(f[1], 'cancelled') then return {ILLEGAL} end
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'statusMessage', 'Cancelled', 'lastUpdatedAt', ARGV[1])
  local receipt, tool = settle_task(id, 'cancelled', ARGV[1])
  timeline('e', ARGV[1], 'cancelled')
  end_task(id, ARGV[5])
  redis.call('PUBLISH', ARGV[7], id)
  return {CANCELLED, receipt, tool}
end
if ARGV[8] ~= '1' then return {ILLEGAL} end
if f[10] and f[10] ~= '' then
  if f[10] ~= ARGV[9] then return {HELD, f[10]} end
  local alive = tonumber(ARGV[10]) + tonumber(ARGV[2])
  if now < alive then redis.call('ZADD', KEYS[3], alive, id); return {ILLEGAL} end
end
local lost = redis.call('HINCRBY', KEYS[1], 'lost', 1)
timeline('l', ARGV[1], f[4])
-- The old attempt's writes are refused from now on (every worker write
-- carries its attempt); the next claim numbers the new one.
redis.call('HINCRBY', KEYS[1], 'attempt', 1)
if lost > tonumber(ARGV[4]) then
  if not allowed(f[1], 'failed') then return {ILLEGAL} end
  local msg = 'Its worker was lost ' .. lost .. ' times (no heartbeat for ' .. ARGV[2] .. ' ms); not run again'
  redis.call('HSET', KEYS[1], 'status', 'failed', 'statusMessage', msg, 'lastUpdatedAt', ARGV[1],
    'error', cjson.encode({code = -32603, message = 'Internal error: ' .. msg}))
  local receipt, tool = settle_task(id, 'failed', ARGV[1])
  timeline('e', ARGV[1], 'failed')
  end_task(id, ARGV[5])
  redis.call('PUBLISH', ARGV[7], id)
  return {LIMIT, lost, beat, receipt, tool}
end
if waiting then
  if not allowed(f[1], 'working') then return {ILLEGAL} end
  for _, k in ipairs(redis.call('HKEYS', KEYS[1])) do
    local key = string.match(k, '^req:(.*)$')
    if key then
      redis.call('HSET', KEYS[1], 'gone:' .. key, redis.call('HGET', KEYS[1], k))
      redis.call('HDEL', KEYS[1], k)
    end
  end
  redis.call('HDEL', KEYS[1], 'waiter')
  redis.call('HSET', KEYS[1], 'status', 'working', 'pending', 0)
end
local seq = redis.call('HINCRBY', KEYS[1], 'resumes', 1)
redis.call('HDEL', KEYS[1], 'worker')
redis.call('HSET', KEYS[1], 'running', 0, 'lastUpdatedAt', ARGV[1],
  'statusMessage', 'Its worker was lost (no heartbeat for ' .. ARGV[2] .. ' ms); queued to run again')
redis.call('ZREM', KEYS[3], id)
free_slot(id)
state_changed(ARGV[5])
redis.call('PUBLISH', ARGV[7], id)
return {OK, seq, lost, beat, f[9] or ''}
