-- append.lua: log one message of a session's SSE stream for replay
-- (sselog.go), unless another writer took the stream over: a client that
-- resumed it elsewhere (Store.TakeStream) while the first front end's
-- request, its connection already gone, has not stopped yet. Two writers
-- would log the same progress and response twice.
-- KEYS[1] the stream's log (Keys.SessionEvents)
-- KEYS[2] the stream's held request (Keys.SessionStreamCall)
-- ARGV[1] the message ('' for a priming event)   ARGV[2] '1' for the final response
-- ARGV[3] the session's idle expiry (ms)   ARGV[4] this writer ('' for a GET stream)
-- ARGV[5] most entries kept (MAXLEN)
-- ARGV[6..8] with the first message of a request's stream: its request id,
-- task id and progress token, recorded with ARGV[4] as the stream's writer
-- Returns the entry id, or false when another writer holds the stream.
local w = redis.call('HGET', KEYS[2], 'w')
if w and w ~= ARGV[4] then return false end
if #ARGV >= 8 then
  redis.call('HSET', KEYS[2], 'req', ARGV[6], 'task', ARGV[7], 'token', ARGV[8], 'w', ARGV[4])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
local id
if ARGV[2] == '1' then
  id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[5], '*', 'd', ARGV[1], 'f', '1')
else
  id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[5], '*', 'd', ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return id
