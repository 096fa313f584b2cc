-- credit.lua: add funds to an owner's account (Accounts.Credit).
-- KEYS[1] the owner's account   KEYS[2] the owner's ledger
-- ARGV[1] now (unix ms)   ARGV[2] principal   ARGV[3] amount (> 0)
-- Returns the balance after the credit; a credit entry is added to the
-- ledger with it, and the account keeps the principal's name (a ledger
-- hook is told it).
local balance = redis.call('HINCRBY', KEYS[1], 'balance', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'credited', ARGV[3])
redis.call('HSET', KEYS[1], 'principal', ARGV[2])
redis.call('XADD', KEYS[2], '*', 'kind', 'credit', 'principal', ARGV[2], 'amount', ARGV[3], 'at', ARGV[1])
return balance
