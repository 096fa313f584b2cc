package taskstate

// MergeExtra exposes mergeExtra to the external tests, which read records
// straight from Redis.
var MergeExtra = mergeExtra
