-- claim.lua: a worker starts (or restarts) the task's job.
-- KEYS[1] task hash   KEYS[2] the owner's live set   KEYS[3] the owner's held index
-- KEYS[4] the owner's account   KEYS[5] the owner's holds   KEYS[6] the owner's ledger
-- ARGV[1] now (unix ms)   ARGV[2] events channel   ARGV[3] task id
-- ARGV[4] the job's sequence number (JobID)   ARGV[5] lost-after (ms)
-- Returns {OK, attempt, field1, value1, ...}: a new attempt number (older
-- attempts are fenced off; statusMessage becomes "Running") and the whole
-- record, or {code}: NOT_FOUND, EXPIRED, TERMINAL (the job is a no-op),
-- STALE (the job is not the task's current one: a late delivery of a job
-- the task was taken back from, or a resumed task's earlier job),
-- ILLEGAL (not "working", e.g. parked for input), CANCELLED (a cancel was
-- requested before this delivery started: the task is now "cancelled" and
-- its reservation settled).
-- A claimed task enters the held index, due to be looked at when its
-- heartbeat would be lost-after old (takeover.lua).
local f = redis.call('HMGET', KEYS[1], 'status', 'cancel', 'createdAt', 'ttlMs', 'resumes')
local status = f[1]
if not status then return {NOT_FOUND} end
if expired(f[3], f[4], ARGV[1]) then return {EXPIRED} end
if terminal(status) then return {TERMINAL} end
if (f[5] or '0') ~= ARGV[4] then return {STALE} end
if f[2] == '1' then
  if not allowed(status, 'cancelled') then return {ILLEGAL} end
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'statusMessage', 'Cancelled',
    'lastUpdatedAt', ARGV[1])
  settle_task(ARGV[3], 'cancelled', ARGV[1])
  ended(ARGV[3])
  state_changed(ARGV[2])
  return {CANCELLED}
end
if status ~= 'working' then return {ILLEGAL} end
local attempt = redis.call('HINCRBY', KEYS[1], 'attempt', 1)
local message = 'Running'
if attempt > 1 then message = 'Running (attempt ' .. attempt .. ')' end
redis.call('HSET', KEYS[1], 'heartbeat', ARGV[1], 'statusMessage', message, 'lastUpdatedAt', ARGV[1],
  'running', attempt)
redis.call('ZADD', KEYS[3], tonumber(ARGV[1]) + tonumber(ARGV[5]), ARGV[3])
state_changed(ARGV[2])
local out = {OK, attempt}
for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do out[#out + 1] = v end
return out
