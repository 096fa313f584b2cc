-- input.lua: a worker asks for input: the task moves to "input_required"
-- with keyed requests and is parked (its job ends; tasks/update resumes it),
-- or, held, keeps its delivery (Store.HoldInput: the worker waits for the
-- answers while its attempt runs on, heartbeating; update.lua then sets the
-- task working again without a new job).
-- KEYS[1] task hash   KEYS[2] the owner's held index (a parked task is held by no delivery)
-- ARGV[1] now (unix ms)   ARGV[2] attempt   ARGV[3] events channel
-- ARGV[4] task id   ARGV[5] '1' to hold the delivery, '0' to park
-- ARGV[6..] pairs of key, request JSON ({method, params})
-- Keys are unique for the task's life: a key ever issued (pending,
-- answered, or dropped by a takeover: 'gone:') is refused with KEY_REUSED.
-- A parked task also leaves the running set of its queue (free_slot); a
-- held one keeps its place there, in the held index and 'running', and
-- records the attempt waiting with it in 'waiter'.
-- Returns OK, or NOT_FOUND, EXPIRED, TERMINAL, STALE, ILLEGAL, KEY_REUSED,
-- CANCELLED (a cancel was requested: the caller ends the task); nothing is
-- written then.
local f = redis.call('HMGET', KEYS[1], 'status', 'createdAt', 'ttlMs', 'attempt', 'cancel')
if not f[1] then return NOT_FOUND end
if expired(f[2], f[3], ARGV[1]) then return EXPIRED end
if terminal(f[1]) then return TERMINAL end
if (f[4] or '0') ~= ARGV[2] then return STALE end
if f[5] == '1' then return CANCELLED end
if not allowed(f[1], 'input_required') then return ILLEGAL end
local n = 0
for i = 6, #ARGV, 2 do
  for _, p in ipairs({'req:', 'ans:', 'gone:'}) do
    if redis.call('HEXISTS', KEYS[1], p .. ARGV[i]) == 1 then return KEY_REUSED end
  end
  n = n + 1
end
if n == 0 then return ILLEGAL end
for i = 6, #ARGV, 2 do redis.call('HSET', KEYS[1], 'req:' .. ARGV[i], ARGV[i + 1]) end
redis.call('HSET', KEYS[1], 'status', 'input_required', 'pending', n, 'statusMessage', 'Waiting for input',
  'lastUpdatedAt', ARGV[1], 'heartbeat', ARGV[1])
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'waiter', ARGV[2])
else
  redis.call('HSET', KEYS[1], 'running', 0)
  redis.call('ZREM', KEYS[2], ARGV[4])
  free_slot(ARGV[4]) -- a parked task holds no worker slot
end
local asked = {}
for i = 6, #ARGV, 2 do asked[#asked + 1] = ARGV[i] end
timeline('q', ARGV[1], table.concat(asked, ','))
state_changed(ARGV[3])
return OK
