-- fair_dequeue.lua: asynq v0.26.0's dequeue script (internal/rdb
-- dequeueCmd: same KEYS, ARGV[1..2] and answer), run when a worker has a
-- free slot on the queue. It takes the job asynq's pending list holds
-- first (a requeue, a retry, a delayed job come due), else the oldest job
-- of the waiting principal with the fewest jobs running on the queue
-- (internal/queue/fair.go): work-conserving, since any waiting job may
-- take a free slot, and fair, since the slot goes to whoever runs least.
-- KEYS[1] pending list   KEYS[2] paused flag   KEYS[3] active list   KEYS[4] lease set
-- ARGV[1] the lease's expiry (unix s)   ARGV[2] the queue's task key prefix
-- ARGV[3] now (unix s)   ARGV[4] the most jobs of one principal that may
-- run on the queue at once (0: no cap); a principal at it is passed over
-- Returns the job's encoded task message, or nil (nothing to run).
if redis.call('EXISTS', KEYS[2]) == 1 then return nil end
local base = string.sub(KEYS[1], 1, -8) -- "asynq:{<queue>}:"
local waiters = base .. 'mcpq:waiters'

-- running: jobs per principal on the queue, from asynq's active list; a
-- job whose lease ran out (its worker is gone) counts for none.
local function running()
  local n = {}
  local now = tonumber(ARGV[3])
  for _, id in ipairs(redis.call('LRANGE', KEYS[3], 0, -1)) do
    local exp = redis.call('ZSCORE', KEYS[4], id)
    if exp and tonumber(exp) >= now then
      local o = redis.call('HGET', ARGV[2] .. id, 'mcpq_o')
      if o then n[o] = (n[o] or 0) + 1 end
    end
  end
  return n
end

-- choose: the waiting principal with the fewest running, the one whose
-- oldest job waited longest among equals. waiters is in that order, and
-- a principal that runs any job is in the active list, so the walk stops
-- at the first one that runs none: it reads at most (active jobs + 1).
local function choose(n)
  local cap = tonumber(ARGV[4])
  local best, fewest
  local from = 0
  while true do
    local batch = redis.call('ZRANGE', waiters, from, from + 99)
    for _, o in ipairs(batch) do
      local r = n[o] or 0
      if (cap == 0 or r < cap) and (not best or r < fewest) then
        best, fewest = o, r
        if r == 0 then return best end
      end
    end
    if #batch < 100 then return best end
    from = from + 100
  end
end

-- pop: the oldest job of owner o; waiters is rescored by its next job.
local function pop(o)
  local list = base .. 'mcpq:w:' .. o
  local id = redis.call('RPOP', list)
  if id then redis.call('DECR', base .. 'mcpq:n') end
  local nxt = redis.call('LINDEX', list, -1)
  if nxt then
    local since = redis.call('HGET', ARGV[2] .. nxt, 'pending_since') or '0'
    redis.call('ZADD', waiters, since, o)
  else
    redis.call('ZREM', waiters, o)
  end
  return id
end

-- blocked: when a dequeue found every waiting principal at its cap, it
-- wrote the queue's state then, the length of the active list and the
-- enqueue count "v" (fair_enqueue.lua): until either changes (a job ends,
-- is requeued or ages out of the active list; a job is enqueued or
-- dropped) or a job is taken from asynq's pending list (which clears it)
-- no job can be runnable, and a dequeue costs three reads, not
-- a walk of the active list, so that jobs waiting over a cap cost an
-- idle worker's polls about what an empty queue does.
local meta = base .. 'mcpq:meta'
local function blocked()
  local m = redis.call('HMGET', meta, 'v', 'blocked')
  local state = redis.call('LLEN', KEYS[3]) .. ':' .. (m[1] or '0')
  return state == m[2], state
end

local id = redis.call('RPOPLPUSH', KEYS[1], KEYS[3])
local queued = id ~= false -- through asynq's pending list, maybe without mcpq_o
local msg = nil
if not id then
  -- The first two waiters say whether none, one or more wait (nw is 2
  -- for "two or more"), in one call.
  local first = redis.call('ZRANGE', waiters, 0, 1)
  local nw = #first
  if nw == 0 then return nil end
  -- Without a cap, no choice fails (choose), so "blocked" never applies;
  -- and when one principal waits, its oldest job is the fair choice
  -- whatever runs: no walk of the active list.
  local capped = tonumber(ARGV[4]) > 0
  local state, n
  if capped then
    local stuck
    stuck, state = blocked()
    if stuck then return nil end
  end
  -- A job deleted while it waited (Client.Drop removes it, so rarely) is
  -- skipped: its hash, and so its message, is gone.
  for _ = 1, 100 do
    local o
    if not capped and nw == 1 then
      o = first[1]
    else
      n = n or running()
      o = choose(n)
    end
    if not o then
      if state then redis.call('HSET', meta, 'blocked', state) end
      return nil
    end
    local cand = pop(o)
    msg = cand and redis.call('HGET', ARGV[2] .. cand, 'msg')
    if msg then
      id = cand
      break
    end
    first = redis.call('ZRANGE', waiters, 0, 1)
    nw = #first
    if nw == 0 then return nil end
  end
  if not id then return nil end
  redis.call('LPUSH', KEYS[3], id)
end
local key = ARGV[2] .. id
-- asynq's dequeue also deletes 'pending_since'; it is left: asynq reads it
-- only from pending jobs (a queue's latency, a scheduled job's update),
-- every enqueue and requeue writes it anew, and the job's hash goes when
-- the job is done.
redis.call('HSET', key, 'state', 'active')
redis.call('ZADD', KEYS[4], ARGV[1], id)
if queued then
  -- It fills the active list back to a length a blocked dequeue may have
  -- written, while a job that ended meanwhile may have left its principal
  -- under its cap: the state no longer says the queue is stuck.
  redis.call('HDEL', meta, 'blocked')
  local m = redis.call('HMGET', key, 'msg', 'mcpq_o')
  msg = m[1]
  if msg and not m[2] then
    -- A job that came through the pending list counts for its principal too.
    local owner = string.match(msg, '{"o":"([^"\\]+)","id":"')
    if owner then redis.call('HSET', key, 'mcpq_o', owner) end
  end
end
return msg
