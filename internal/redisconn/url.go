package redisconn

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Connect returns a client for a Redis URL in one of three forms (the
// topologies of docs/redis.md):
//
//	redis://[user:pass@]host:port/db     one server (also rediss:// and unix://)
//	redis+cluster://[user:pass@]h1:p1,h2:p2,.../   a Redis Cluster (rediss+cluster:// for TLS)
//	redis+sentinel://[user:pass@]s1:p1,s2:p2,.../MASTER[/db]   a Sentinel-managed primary
//	                                                 (rediss+sentinel:// for TLS)
//
// The cluster and sentinel forms list seed addresses separated by commas
// and take go-redis's query options (e.g. ?dial_timeout=3s). For sentinel,
// user:pass are the data nodes' credentials and the query options
// sentinel_username and sentinel_password those of the sentinels. The
// parsing of options is go-redis's own (ParseURL, ParseClusterURL,
// ParseFailoverURL); this function only maps the multi-address forms onto
// them. A malformed URL gets an error naming what is wrong. Connections
// skip go-redis's look before each use (dial.go).
func Connect(rawURL string) (redis.UniversalClient, error) { return connect(rawURL, false) }

// connect is Connect; ctxTimeouts sets go-redis's ContextTimeoutEnabled,
// so a command's context deadline bounds its socket reads and writes.
func connect(rawURL string, ctxTimeouts bool) (redis.UniversalClient, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, fmt.Errorf("redis URL %q: no scheme (want redis://, rediss://, unix://, redis+cluster:// or redis+sentinel://)", redact(rawURL))
	}
	switch scheme {
	case "redis", "rediss", "unix":
		opts, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redis URL %q: %w", redact(rawURL), err)
		}
		opts.ContextTimeoutEnabled = ctxTimeouts || opts.ContextTimeoutEnabled
		opts.Dialer = unpeekedDialer(opts.DialTimeout, opts.TLSConfig)
		opts.PipelinePoolSize = pipelinePool(opts.PipelinePoolSize, opts.PipelineReadBufferSize, opts.PipelineWriteBufferSize)
		return redis.NewClient(opts), nil
	case "redis+cluster", "rediss+cluster":
		opts, err := parseClusterURL(strings.TrimSuffix(scheme, "+cluster"), rest)
		if err != nil {
			return nil, fmt.Errorf("redis URL %q: %w", redact(rawURL), err)
		}
		opts.ContextTimeoutEnabled = ctxTimeouts || opts.ContextTimeoutEnabled
		opts.Dialer = unpeekedDialer(opts.DialTimeout, opts.TLSConfig)
		return redis.NewClusterClient(opts), nil
	case "redis+sentinel", "rediss+sentinel":
		opts, err := parseSentinelURL(strings.TrimSuffix(scheme, "+sentinel"), rest)
		if err != nil {
			return nil, fmt.Errorf("redis URL %q: %w", redact(rawURL), err)
		}
		opts.ContextTimeoutEnabled = ctxTimeouts || opts.ContextTimeoutEnabled
		opts.Dialer = unpeekedDialer(opts.DialTimeout, opts.TLSConfig)
		opts.PipelinePoolSize = pipelinePool(opts.PipelinePoolSize, opts.PipelineReadBufferSize, opts.PipelineWriteBufferSize)
		return redis.NewFailoverClient(opts), nil
	}
	return nil, fmt.Errorf("redis URL %q: unknown scheme %q (want redis, rediss, unix, redis+cluster or redis+sentinel)", redact(rawURL), scheme)
}

// pipelinePool is the PipelinePoolSize mcpq gives go-redis: -1, pipelines
// on the main pool, unless the URL sizes the pipeline pool or its buffers
// (pipeline_pool_size, pipeline_read_buffer_size,
// pipeline_write_buffer_size). go-redis otherwise keeps a second pool for
// pipelines whose connections each hold 128 KiB read and write buffers
// (256 KiB of heap a connection, against 64 KiB on the main pool) and adds
// connections to Redis; mcpq's pipelines are a few commands of a few
// hundred bytes (a create's script and enqueue), which the main pool's
// 32 KiB buffers carry whole. Less heap is fewer collections for the same
// work (docs/benchmarks.md). A cluster client has no pipeline pool unless
// its buffers are set, so it is left as it is.
func pipelinePool(size, readBuf, writeBuf int) int {
	if size != 0 || readBuf != 0 || writeBuf != 0 {
		return size
	}
	return -1
}

// multiAddr is the authority of a cluster or sentinel URL split up.
type multiAddr struct {
	userinfo string // "user:pass@" or ""
	addrs    []string
	path     string // from the first "/" on, without the query
	query    url.Values
}

// splitMulti splits "user:pass@h1:p1,h2:p2/path?query": url.Parse cannot
// take several hosts in one authority.
func splitMulti(rest string) (multiAddr, error) {
	var m multiAddr
	rest, rawQuery, _ := strings.Cut(rest, "?")
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return m, fmt.Errorf("query: %w", err)
	}
	m.query = q
	authority, path, hasPath := strings.Cut(rest, "/")
	if hasPath {
		m.path = "/" + path
	}
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		m.userinfo, authority = authority[:i+1], authority[i+1:]
	}
	for _, a := range strings.Split(authority, ",") {
		h, p, err := net.SplitHostPort(a)
		if err != nil || h == "" || p == "" {
			return m, fmt.Errorf("address %q is not host:port", a)
		}
		m.addrs = append(m.addrs, a)
	}
	return m, nil
}

// parseClusterURL maps redis+cluster://h1:p1,h2:p2/ onto go-redis's
// redis://h1:p1?addr=h2:p2.
func parseClusterURL(scheme, rest string) (*redis.ClusterOptions, error) {
	m, err := splitMulti(rest)
	if err != nil {
		return nil, err
	}
	if m.path != "" && m.path != "/" {
		return nil, fmt.Errorf("a cluster URL has no path (a cluster has only database 0), got %q", m.path)
	}
	for _, a := range m.addrs[1:] {
		m.query.Add("addr", a)
	}
	u := scheme + "://" + m.userinfo + m.addrs[0]
	if len(m.query) > 0 {
		u += "?" + m.query.Encode()
	}
	return redis.ParseClusterURL(u)
}

// parseSentinelURL maps redis+sentinel://s1:p1,s2:p2/MASTER/db onto
// go-redis's redis://s1:p1/db?master_name=MASTER&addr=s2:p2.
func parseSentinelURL(scheme, rest string) (*redis.FailoverOptions, error) {
	m, err := splitMulti(rest)
	if err != nil {
		return nil, err
	}
	parts := strings.FieldsFunc(m.path, func(r rune) bool { return r == '/' })
	if len(parts) == 0 || len(parts) > 2 {
		return nil, fmt.Errorf("a sentinel URL's path is /MASTERNAME or /MASTERNAME/DB, got %q", m.path)
	}
	master, db := parts[0], "0"
	if len(parts) == 2 {
		db = parts[1]
	}
	sentUser, sentPass := m.query.Get("sentinel_username"), m.query.Get("sentinel_password")
	m.query.Del("sentinel_username")
	m.query.Del("sentinel_password")
	m.query.Set("master_name", master)
	for _, a := range m.addrs[1:] {
		m.query.Add("addr", a)
	}
	opts, err := redis.ParseFailoverURL(scheme + "://" + m.addrs[0] + "/" + url.PathEscape(db) + "?" + m.query.Encode())
	if err != nil {
		return nil, err
	}
	// go-redis reads userinfo as the sentinels' credentials; here it is the
	// data nodes', which is what every other URL form means by it.
	if m.userinfo != "" {
		u, err := url.Parse("redis://" + m.userinfo + "x")
		if err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		opts.Username = u.User.Username()
		opts.Password, _ = u.User.Password()
	}
	opts.SentinelUsername, opts.SentinelPassword = sentUser, sentPass
	return opts, nil
}

// redact hides a password in a URL shown in an error.
func redact(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return rawURL
	}
	if i := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); i >= 0 {
		if j := strings.Index(rest[:i], ":"); j >= 0 {
			return scheme + "://" + rest[:j] + ":xxxxx" + rest[i:]
		}
	}
	return rawURL
}
