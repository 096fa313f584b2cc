-- claim.lua: a worker starts (or restarts) the task's job.
-- KEYS[1] task hash   KEYS[2] the owner's live index   KEYS[3] the owner's held index
-- KEYS[4] the owner's account   KEYS[5] the owner's holds   KEYS[6] the owner's ledger
-- KEYS[7] the owner's running set on the job's queue (Keys.running)
-- ARGV[1] now (unix ms)   ARGV[2] events channel   ARGV[3] task id
-- ARGV[4] the job's sequence number (JobID)   ARGV[5] lost-after (ms)
-- ARGV[6] the owner's share of the queue: most of its tasks that may run
-- on it at once (0: no share; KEYS[7] is then left alone)   ARGV[7] the queue's name
-- ARGV[8] the claiming worker's id ('' for none; recorded as 'worker', lease.go,
-- and in the timeline's attempt entry, timeline.lua)
-- ARGV[9] the attempts of the task that run in the claiming worker, as ',1,2,'
-- A task that ends here has its record rebuilt compact (prelude end_task(), compact():
-- long values move to its companion KEYS[1]..':x', Keys.TaskExtra).
-- Returns {OK, attempt, field1, value1, ...}: a new attempt number (older
-- attempts are fenced off; statusMessage becomes "Running") and the record
-- as a run reads it (below; the whole record after an input round), or
-- {code}: NOT_FOUND, EXPIRED, TERMINAL (the job is a no-op), STALE (the
-- job is not the task's current one: a late delivery of a job the task
-- was taken back from, or a resumed task's earlier job),
-- ILLEGAL (not "working", e.g. parked for input), CANCELLED (a cancel was
-- requested before this delivery started: the task is now "cancelled" and
-- its reservation settled; its receipt and tool follow when it had one:
-- settled.go), or {BUSY, seq, running}: the owner already
-- runs its share of the queue; the task is not claimed, this job is done
-- with and job seq (a new sequence number, as a takeover issues) is the
-- one to enqueue, later. HELD: a delivery of another worker holds the task
-- (a second delivery of the same job, as asynq makes once its lease of the
-- first ran out in a Redis outage), or the claiming worker's own delivery
-- that still runs there: the job is a no-op; only the takeover scan, which
-- judges that worker's lease, takes the task from it.
-- A claimed task enters the held index, due to be looked at when its
-- heartbeat would be lost-after old (takeover.lua), and under a share the
-- running set, scored the same (heartbeat.lua moves it on), so a killed
-- worker's slot ages out even before a takeover scan frees it.
local f = redis.call('HMGET', KEYS[1], 'status', 'cancel', 'createdAt', 'ttlMs', 'resumes', 'slot', 'statusMessage',
  'attempt', 'version', 'running', 'worker', 'tl', 'startedAt', 'pending')
local status = f[1]
if not status then return {NOT_FOUND} end
if expired(f[3], f[4], ARGV[1]) then return {EXPIRED} end
if terminal(status) then return {TERMINAL} end
if (f[5] or '0') ~= ARGV[4] then return {STALE} end
if f[2] == '1' then
  if not allowed(status, 'cancelled') then return {ILLEGAL} end
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'statusMessage', 'Cancelled',
    'lastUpdatedAt', ARGV[1])
  local receipt, tool = settle_task(ARGV[3], 'cancelled', ARGV[1])
  timeline('e', ARGV[1], 'cancelled')
  end_task(ARGV[3], ARGV[2])
  return {CANCELLED, receipt, tool}
end
if status ~= 'working' then return {ILLEGAL} end
if f[10] and f[10] ~= '0' and f[11] and (f[11] ~= ARGV[8] or string.find(ARGV[9], ',' .. f[10] .. ',', 1, true)) then
  return {HELD}
end
local share = tonumber(ARGV[6])
if share > 0 then
  -- Entries whose heartbeat is lost-after old belong to killed workers.
  redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', '(' .. ARGV[1])
  local running = redis.call('ZCARD', KEYS[7])
  if running >= share and not redis.call('ZSCORE', KEYS[7], ARGV[3]) then
    local seq = redis.call('HINCRBY', KEYS[1], 'resumes', 1)
    local msg = 'Queued: this principal already runs ' .. running .. ' tasks on queue ' .. ARGV[7]
    if f[7] ~= msg then
      redis.call('HSET', KEYS[1], 'statusMessage', msg, 'lastUpdatedAt', ARGV[1])
      state_changed(ARGV[2])
    end
    return {BUSY, seq, running}
  end
end
if f[6] and (share == 0 or f[6] ~= KEYS[7]) then
  redis.call('ZREM', f[6], ARGV[3])
  redis.call('HDEL', KEYS[1], 'slot')
end
if share > 0 then
  redis.call('ZADD', KEYS[7], tonumber(ARGV[1]) + tonumber(ARGV[5]), ARGV[3])
  redis.call('HSET', KEYS[1], 'slot', KEYS[7])
end
-- The new attempt and version, the worker and the timeline's entry are
-- written with the state (one HSET, no read-back), and the change
-- announced from what this script knows.
local attempt = tonumber(f[8] or '0') + 1
local version = tonumber(f[9] or '0') + 1
local message = 'Running'
if attempt > 1 then message = 'Running (attempt ' .. attempt .. ')' end
local fields = {'heartbeat', ARGV[1], 'statusMessage', message, 'lastUpdatedAt', ARGV[1],
  'running', attempt, 'attempt', attempt, 'version', version}
if ARGV[8] ~= '' then
  fields[#fields + 1] = 'worker'; fields[#fields + 1] = ARGV[8]
elseif f[11] then
  redis.call('HDEL', KEYS[1], 'worker')
end
local tl = f[3] and timeline_next(f[3], f[12], 's', ARGV[1], attempt .. '@' .. ARGV[8])
if tl then fields[#fields + 1] = 'tl'; fields[#fields + 1] = tl end
if not f[13] then fields[#fields + 1] = 'startedAt'; fields[#fields + 1] = ARGV[1] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('ZADD', KEYS[3], tonumber(ARGV[1]) + tonumber(ARGV[5]), ARGV[3])
announce(ARGV[2], version, 'working', message, ARGV[1], nil)
local out = {OK, attempt}
if f[14] then
  -- An input round ran ('pending'): its requests and answers are fields
  -- of their own, so the whole record goes back.
  for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do out[#out + 1] = v end
  return out
end
-- What a run reads (taskstate.Claim): the call's fields, read here, and the
-- state this script read or wrote; not the rest (the poll interval, the
-- timeline, billing's fields): about 3 µs of Redis less than the whole
-- record.
local call = {'owner', 'tool', 'arguments', 'argsRef', 'caps', 'checkpoint'}
local v = redis.call('HMGET', KEYS[1], unpack(call))
for i, k in ipairs(call) do
  if v[i] then out[#out + 1] = k; out[#out + 1] = v[i] end
end
local known = {'status', status, 'createdAt', f[3], 'ttlMs', f[4], 'resumes', f[5], 'startedAt', f[13]}
for i = 1, #known, 2 do
  if known[i + 1] then out[#out + 1] = known[i]; out[#out + 1] = known[i + 1] end
end
for i = 1, #fields, 2 do
  if fields[i] ~= 'tl' then out[#out + 1] = fields[i]; out[#out + 1] = tostring(fields[i + 1]) end
end
return out
