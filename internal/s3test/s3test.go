// Package s3test starts a real S3-compatible server for tests: SeaweedFS's
// weed binary (built by scripts/lib.sh need_weed into .cache/bin) on free
// loopback ports, with one identity so requests and presigned URLs are
// signed and checked the way a production S3 checks them.
package s3test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Access key pair of the test server's one identity.
const (
	AccessKey = "mcpq-test-access"
	SecretKey = "mcpq-test-secret-key-0123456789"
)

// Binary returns the weed binary named by MCPQ_WEED_BIN (or weed on PATH),
// or skips the test, or fails it under MCPQ_REQUIRE_S3=1.
func Binary(t testing.TB) string {
	t.Helper()
	p := os.Getenv("MCPQ_WEED_BIN")
	if p == "" {
		p = "weed"
	}
	p, err := exec.LookPath(p)
	if err != nil {
		if os.Getenv("MCPQ_REQUIRE_S3") == "1" {
			t.Fatalf("SeaweedFS weed binary required (MCPQ_REQUIRE_S3=1): %v", err)
		}
		t.Skipf("no SeaweedFS weed binary (set MCPQ_WEED_BIN; scripts/test builds it): %v", err)
	}
	return p
}

// Server is a running weed server with its S3 API on Endpoint.
type Server struct {
	// Endpoint is the S3 API's loopback host:port (plain http).
	Endpoint string
	// Dir holds its data and log.
	Dir string
	cmd *exec.Cmd
}

// Start runs `weed server -s3` on free loopback ports, waits until its S3
// API answers a signed request and SIGKILLs it when the test ends (it is
// slow to stop on SIGTERM and its data is thrown away anyway).
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	conf := map[string]any{"identities": []any{map[string]any{
		"name":        "mcpq",
		"credentials": []any{map[string]string{"accessKey": AccessKey, "secretKey": SecretKey}},
		"actions":     []string{"Admin", "Read", "List", "Tagging", "Write"},
	}}}
	b, _ := json.Marshal(conf)
	confPath := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(confPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := range 3 {
		ports := freePorts(t, 4)
		data := filepath.Join(dir, "data"+strconv.Itoa(attempt))
		if err := os.MkdirAll(data, 0o700); err != nil {
			t.Fatal(err)
		}
		logf, err := os.Create(filepath.Join(dir, "weed"+strconv.Itoa(attempt)+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "server", "-dir="+data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
			"-master.port="+strconv.Itoa(ports[0]), "-volume.port="+strconv.Itoa(ports[1]),
			"-filer.port="+strconv.Itoa(ports[2]), "-s3", "-s3.port="+strconv.Itoa(ports[3]),
			"-s3.config="+confPath, "-s3.port.iceberg=0", "-s3.port.lance=0", "-master.telemetry=false",
			"-master.volumeSizeLimitMB=64", "-volume.max=8")
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true} // never outlive the tests
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
		s := &Server{Endpoint: fmt.Sprintf("127.0.0.1:%d", ports[3]), Dir: dir, cmd: cmd}
		if lastErr = s.waitReady(exited); lastErr == nil {
			t.Cleanup(func() { s.kill(); <-exited })
			return s
		}
		s.kill()
		<-exited
		log, _ := os.ReadFile(logf.Name())
		t.Logf("weed server attempt %d failed: %v\n%s", attempt+1, lastErr, tail(log, 2000))
	}
	t.Fatalf("weed server did not start: %v", lastErr)
	return nil
}

// Client is a minio client of the server with the test identity.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitReady polls until the S3 API answers a signed bucket listing and
// can store an object (the volume server has joined the master).
func (s *Server) waitReady(exited <-chan struct{}) error {
	c, err := minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = c.ListBuckets(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-exited:
			return fmt.Errorf("exited: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Server) kill() {
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// freePorts returns n ports p, each free on loopback together with p+10000
// (weed's gRPC port of each service), below the kernel's ephemeral range.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			t.Fatal("no free port pairs found")
		}
		p := 12000 + rand.IntN(18000)
		if free(p) && free(p+10000) {
			ports = append(ports, p)
		}
	}
	return ports
}

func free(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
