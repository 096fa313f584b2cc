package redisconn_test

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/internal/redisconn"
)

func TestConnectURLForms(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		c, err := redisconn.Connect("redis://u:pw@127.0.0.1:7000/3")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		o := c.(*redis.Client).Options()
		if o.Addr != "127.0.0.1:7000" || o.DB != 3 || o.Username != "u" || o.Password != "pw" {
			t.Fatalf("options %+v", o)
		}
	})
	t.Run("pipelines", func(t *testing.T) {
		// Pipelines run on the main pool (url.go, pipelinePool) unless
		// the URL sizes the pipeline pool or its buffers.
		for url, want := range map[string]int{
			"redis://127.0.0.1:7000/0":                                   -1,
			"redis://127.0.0.1:7000/0?pipeline_pool_size=4":              4,
			"redis://127.0.0.1:7000/0?pipeline_read_buffer_size=65536":   0,
			"redis://127.0.0.1:7000/0?pipeline_write_buffer_size=131072": 0,
		} {
			c, err := redisconn.Connect(url)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.(*redis.Client).Options().PipelinePoolSize; got != want {
				t.Errorf("%s: PipelinePoolSize %d, want %d", url, got, want)
			}
			c.Close()
		}
	})
	t.Run("cluster", func(t *testing.T) {
		c, err := redisconn.Connect("redis+cluster://u:pw@127.0.0.1:7000,127.0.0.1:7001,h3:7002/?dial_timeout=3s")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		o := c.(*redis.ClusterClient).Options()
		if strings.Join(o.Addrs, " ") != "127.0.0.1:7000 127.0.0.1:7001 h3:7002" || o.Username != "u" ||
			o.Password != "pw" || o.DialTimeout.String() != "3s" {
			t.Fatalf("options %+v", o)
		}
	})
	t.Run("sentinel", func(t *testing.T) {
		// A failover client hides its options; a wrong master name or
		// address would show as a refused parse in the table below, and
		// e2e/sentinel_test.go connects through this form for real.
		c, err := redisconn.Connect("redis+sentinel://:pw@127.0.0.1:26379,127.0.0.1:26380/mymaster/2?sentinel_password=s")
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})
}

func TestConnectRejectsMalformed(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"127.0.0.1:6379", "no scheme"},
		{"http://127.0.0.1:6379", `unknown scheme "http"`},
		{"redis://127.0.0.1:6379/x", "invalid database number"},
		{"redis+cluster://127.0.0.1:7000,nonsense/", `address "nonsense" is not host:port`},
		{"redis+cluster://127.0.0.1:7000/2", "a cluster URL has no path"},
		{"redis+cluster://127.0.0.1:7000/?bogus=1", "unexpected option: bogus"},
		{"redis+sentinel://127.0.0.1:26379/", "path is /MASTERNAME or /MASTERNAME/DB"},
		{"redis+sentinel://127.0.0.1:26379/m/1/2", "path is /MASTERNAME or /MASTERNAME/DB"},
		{"redis+sentinel://127.0.0.1:26379/m/x", "invalid database number"},
		{"redis+sentinel://:secret@127.0.0.1:26379,:1/m", `address ":1" is not host:port`},
	} {
		t.Run(tc.url, func(t *testing.T) {
			c, err := redisconn.Connect(tc.url)
			if err == nil {
				c.Close()
				t.Fatalf("accepted %q", tc.url)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error shows the password: %q", err)
			}
		})
	}
}
