// Package redisconn is how mcpq reaches Redis: Connect turns a Redis URL
// of any of the three topologies (one server, a Cluster, a Sentinel-managed
// primary: docs/redis.md) into a go-redis client, and IsUnavailable is the
// one classification of "Redis cannot serve this right now", which the
// front end answers with HTTP 503 and the worker rides out.
package redisconn
