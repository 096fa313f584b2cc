-- takestream.lua: a resume makes ARGV[1] the writer of a request's SSE
-- stream (sselog.go) and reads the request it answers: from now on only
-- the resuming front end logs the stream's messages (append.lua).
-- KEYS[1] the stream's held request (Keys.SessionStreamCall)
-- ARGV[1] the new writer
-- Returns {request id, task id, progress token}, or false when the
-- session has no such request stream (none, or expired).
local f = redis.call('HMGET', KEYS[1], 'req', 'task', 'token')
if not f[2] or f[2] == '' then return false end
redis.call('HSET', KEYS[1], 'w', ARGV[1])
return {f[1] or '', f[2], f[3] or ''}
