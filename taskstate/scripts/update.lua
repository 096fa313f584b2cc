-- update.lua: answers to a task's input requests (tasks/update, or an MRTR
-- retry). Only pending keys are applied; keys never issued, already answered
-- or unknown are ignored, so a retried update never applies an answer twice.
-- KEYS[1] task hash
-- ARGV[1] now (unix ms)   ARGV[2] events channel
-- ARGV[3..] pairs of key, answer JSON
-- Returns {OK, applied, resume}: resume is the resume sequence number (> 0)
-- when the last pending answer arrived and the task is "working" again (the
-- caller enqueues its job), else 0. A task whose delivery holds it while it
-- waits (input.lua's 'waiter') is working again with resume 0: that delivery
-- reads the answers, no job is enqueued. Or {code}: NOT_FOUND, EXPIRED, TERMINAL.
local f = redis.call('HMGET', KEYS[1], 'status', 'createdAt', 'ttlMs', 'pending', 'waiter')
if not f[1] then return {NOT_FOUND} end
if expired(f[2], f[3], ARGV[1]) then return {EXPIRED} end
if terminal(f[1]) then return {TERMINAL} end
if f[1] ~= 'input_required' then return {OK, 0, 0} end
if not allowed('input_required', 'working') then return {ILLEGAL} end
local applied, keys = 0, {}
for i = 3, #ARGV, 2 do
  local rk = 'req:' .. ARGV[i]
  if redis.call('HEXISTS', KEYS[1], rk) == 1 then
    redis.call('HDEL', KEYS[1], rk)
    redis.call('HSET', KEYS[1], 'ans:' .. ARGV[i], ARGV[i + 1])
    applied = applied + 1
    keys[#keys + 1] = ARGV[i]
  end
end
if applied == 0 then return {OK, 0, 0} end
timeline('a', ARGV[1], table.concat(keys, ','))
local pending = tonumber(f[4] or '0') - applied
if pending > 0 then
  redis.call('HSET', KEYS[1], 'pending', pending, 'lastUpdatedAt', ARGV[1])
  state_changed(ARGV[2])
  return {OK, applied, 0}
end
if f[5] then
  redis.call('HDEL', KEYS[1], 'waiter')
  redis.call('HSET', KEYS[1], 'status', 'working', 'pending', 0, 'statusMessage', 'Resuming with input',
    'lastUpdatedAt', ARGV[1])
  state_changed(ARGV[2])
  return {OK, applied, 0}
end
local resume = redis.call('HINCRBY', KEYS[1], 'resumes', 1)
redis.call('HSET', KEYS[1], 'status', 'working', 'pending', 0, 'running', 0, 'statusMessage', 'Resuming with input',
  'lastUpdatedAt', ARGV[1], 'heartbeat', ARGV[1])
state_changed(ARGV[2])
return {OK, applied, resume}
