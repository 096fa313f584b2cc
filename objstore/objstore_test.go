package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/mcpq/mcpq/internal/s3test"
	"github.com/mcpq/mcpq/objstore"
)

// suite checks the Store contract; both implementations run it.
func suite(t *testing.T, s objstore.Store) {
	ctx := context.Background()
	big := bytes.Repeat([]byte{0, 1, 2, 0xff, '\n'}, 300_000) // 1.5 MB, binary, with newlines
	t.Run("put and get", func(t *testing.T) {
		if err := s.Put(ctx, "task1/1.0", big, "image/gif"); err != nil {
			t.Fatal(err)
		}
		o, err := s.Get(ctx, "task1/1.0")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(o.Data, big) || o.ContentType != "image/gif" {
			t.Fatalf("got %d bytes of %q, want %d bytes of image/gif", len(o.Data), o.ContentType, len(big))
		}
		if err := s.Put(ctx, "task1/1.0", []byte("new"), "text/plain"); err != nil {
			t.Fatal(err)
		}
		if o, err = s.Get(ctx, "task1/1.0"); err != nil || string(o.Data) != "new" || o.ContentType != "text/plain" {
			t.Fatalf("after overwrite: %q %q %v", o.Data, o.ContentType, err)
		}
		if err := s.Put(ctx, "task1/1.1", nil, "application/octet-stream"); err != nil {
			t.Fatal(err)
		}
		if o, err = s.Get(ctx, "task1/1.1"); err != nil || len(o.Data) != 0 {
			t.Fatalf("empty object: %q %v", o.Data, err)
		}
	})
	t.Run("missing and invalid keys", func(t *testing.T) {
		for _, k := range []string{"task1/9.9", "nothing", "task1", "../etc/passwd", "a//b", "", ".hidden", "a/../b", "sp ace"} {
			if _, err := s.Get(ctx, k); !errors.Is(err, objstore.ErrNotFound) {
				t.Errorf("Get(%q) = %v, want ErrNotFound", k, err)
			}
		}
		for _, k := range []string{"../x", "a//b", "", ".put-1", "a/./b", "a\nb", strings.Repeat("a", 513)} {
			if err := s.Put(ctx, k, []byte("x"), "text/plain"); err == nil || !strings.Contains(err.Error(), "invalid key") {
				t.Errorf("Put(%q) = %v, want an invalid key error", k, err)
			}
		}
	})
	t.Run("delete prefix", func(t *testing.T) {
		for _, k := range []string{"del/1.0", "del/1.1", "del/2.0", "delx/1.0"} {
			if err := s.Put(ctx, k, []byte(k), "text/plain"); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.DeletePrefix(ctx, "del"); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"del/1.0", "del/1.1", "del/2.0"} {
			if _, err := s.Get(ctx, k); !errors.Is(err, objstore.ErrNotFound) {
				t.Errorf("Get(%q) after DeletePrefix = %v, want ErrNotFound", k, err)
			}
		}
		if o, err := s.Get(ctx, "delx/1.0"); err != nil || string(o.Data) != "delx/1.0" {
			t.Errorf("a sibling prefix was touched: %q %v", o.Data, err)
		}
		if err := s.DeletePrefix(ctx, "never-written"); err != nil {
			t.Errorf("DeletePrefix of nothing: %v", err)
		}
		if err := s.DeletePrefix(ctx, "../x"); err == nil {
			t.Error("DeletePrefix(../x) was accepted")
		}
	})
	t.Run("delete", func(t *testing.T) {
		key := objstore.ArgumentsKey("deltask")
		for _, k := range []string{key, "deltask/1.0"} {
			if err := s.Put(ctx, k, []byte(`{"a":1}`), "application/json"); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, key); !errors.Is(err, objstore.ErrNotFound) {
			t.Errorf("Get(%q) after Delete = %v, want ErrNotFound", key, err)
		}
		if o, err := s.Get(ctx, "deltask/1.0"); err != nil || string(o.Data) != `{"a":1}` {
			t.Errorf("a sibling object was touched: %q %v", o.Data, err)
		}
		for _, k := range []string{key, "never-written/args", "deltask"} {
			if err := s.Delete(ctx, k); err != nil {
				t.Errorf("Delete(%q) of no object: %v", k, err)
			}
		}
		if o, err := s.Get(ctx, "deltask/1.0"); err != nil || string(o.Data) != `{"a":1}` {
			t.Errorf("Delete of the prefix removed an object under it: %q %v", o.Data, err)
		}
		if err := s.Delete(ctx, "../x"); err == nil || !strings.Contains(err.Error(), "invalid key") {
			t.Errorf("Delete(../x) = %v, want an invalid key error", err)
		}
	})
	t.Run("sweep", func(t *testing.T) {
		if err := s.Put(ctx, "sweep/1.0", []byte("x"), "text/plain"); err != nil {
			t.Fatal(err)
		}
		n, err := s.Sweep(ctx, time.Now().Add(-time.Hour))
		if err != nil || n != 0 {
			t.Fatalf("sweep of nothing old: %d %v", n, err)
		}
		if _, err := s.Get(ctx, "sweep/1.0"); err != nil {
			t.Fatalf("a fresh object was swept: %v", err)
		}
		n, err = s.Sweep(ctx, time.Now().Add(time.Hour))
		if err != nil || n < 1 {
			t.Fatalf("sweep of everything: %d %v", n, err)
		}
		for _, k := range []string{"sweep/1.0", "task1/1.0", "delx/1.0"} {
			if _, err := s.Get(ctx, k); !errors.Is(err, objstore.ErrNotFound) {
				t.Errorf("Get(%q) after sweep = %v, want ErrNotFound", k, err)
			}
		}
	})
}

func TestDir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	s, err := objstore.Open(context.Background(), "file://"+root, objstore.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	suite(t, s)
	if _, err := s.PresignGet(context.Background(), "a/1.0", time.Minute); !errors.Is(err, objstore.ErrNoPresign) {
		t.Errorf("PresignGet = %v, want ErrNoPresign", err)
	}
	t.Run("sweep by age", func(t *testing.T) {
		ctx := context.Background()
		for _, k := range []string{"old/1.0", "new/1.0"} {
			if err := s.Put(ctx, k, []byte("x"), "text/plain"); err != nil {
				t.Fatal(err)
			}
		}
		past := time.Now().Add(-48 * time.Hour)
		if err := os.Chtimes(filepath.Join(root, "old", "1.0"), past, past); err != nil {
			t.Fatal(err)
		}
		n, err := s.Sweep(ctx, time.Now().Add(-24*time.Hour))
		if err != nil || n != 1 {
			t.Fatalf("Sweep = %d, %v; want 1 removed", n, err)
		}
		if _, err := os.Stat(filepath.Join(root, "old")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the emptied folder stayed: %v", err)
		}
		if _, err := s.Get(ctx, "new/1.0"); err != nil {
			t.Errorf("the fresh object went: %v", err)
		}
	})
}

func TestS3(t *testing.T) {
	srv := s3test.Start(t)
	ctx := context.Background()
	creds := objstore.Credentials{AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey}
	s, err := objstore.Open(ctx, "s3://mcpq-blobs/run1?insecure=true&endpoint="+srv.Endpoint, creds)
	if err != nil {
		t.Fatal(err)
	}
	suite(t, s)
	t.Run("presigned URL", func(t *testing.T) {
		body := bytes.Repeat([]byte("GIF89a"), 1000)
		if err := s.Put(ctx, "pre/1.0", body, "image/gif"); err != nil {
			t.Fatal(err)
		}
		u, err := s.PresignGet(ctx, "pre/1.0", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(u, "X-Amz-Signature=") {
			t.Fatalf("not a signed URL: %s", u)
		}
		got, code := httpGet(t, u)
		if code != http.StatusOK || !bytes.Equal(got, body) {
			t.Fatalf("GET presigned: %d, %d bytes", code, len(got))
		}
		// The server checks the signature: a changed one is refused, and so
		// is the object without one.
		tampered := strings.Replace(u, "X-Amz-Signature=", "X-Amz-Signature=00", 1)
		if _, code := httpGet(t, tampered); code != http.StatusForbidden {
			t.Errorf("GET with a tampered signature: %d, want 403", code)
		}
		unsigned := "http://" + srv.Endpoint + "/mcpq-blobs/run1/pre/1.0"
		if _, code := httpGet(t, unsigned); code != http.StatusForbidden {
			t.Errorf("GET without a signature: %d, want 403", code)
		}
	})
	t.Run("objects live under the prefix", func(t *testing.T) {
		if err := s.Put(ctx, "where/1.0", []byte("here"), "text/plain"); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Client(t).StatObject(ctx, "mcpq-blobs", "run1/where/1.0", minio.StatObjectOptions{}); err != nil {
			t.Errorf("object not at run1/where/1.0: %v", err)
		}
	})
	t.Run("expiry rule", func(t *testing.T) {
		for range 2 { // a second open replaces the rule rather than adding one
			if _, err := objstore.Open(ctx, "s3://mcpq-blobs/run2?expire_days=2&insecure=true&endpoint="+srv.Endpoint, creds); err != nil {
				t.Fatal(err)
			}
		}
		lc, err := srv.Client(t).GetBucketLifecycle(ctx, "mcpq-blobs")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range lc.Rules {
			if r.ID == "mcpq-expire-run2" {
				n++
				if r.Expiration.Days != 2 || r.Status != "Enabled" || r.RuleFilter.Prefix != "run2/" {
					t.Errorf("rule %+v", r)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d mcpq rules for run2 in %+v, want 1", n, lc.Rules)
		}
	})
	t.Run("wrong credentials", func(t *testing.T) {
		_, err := objstore.Open(ctx, "s3://mcpq-blobs?insecure=true&endpoint="+srv.Endpoint,
			objstore.Credentials{AccessKey: s3test.AccessKey, SecretKey: "wrong"})
		if err == nil {
			t.Fatal("Open with a wrong secret succeeded")
		}
	})
}

func httpGet(t *testing.T, u string) ([]byte, int) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b, resp.StatusCode
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"ftp://x/y", "scheme must be file or s3"},
		{"file://host/tmp/x", "names a local path"},
		{"file:relative", "must be absolute"},
		{"s3://?endpoint=127.0.0.1:1", "bucket name is empty"},
		{"s3://b?endpoint=127.0.0.1:1&color=red", `unknown parameter "color"`},
		{"s3://b?endpoint=127.0.0.1:1&insecure=maybe", `insecure="maybe" is not a boolean`},
		{"s3://b?endpoint=127.0.0.1:1&expire_days=0", `expire_days="0" is not a whole number of days above 0`},
		{"s3://b?endpoint=127.0.0.1:1&expire_days=1.5", `expire_days="1.5" is not a whole number`},
		{"s3://b/../x?endpoint=127.0.0.1:1", "invalid S3 prefix"},
		{"%zz", "invalid URL escape"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := objstore.Open(context.Background(), tc.url, objstore.Credentials{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open(%q) = %v, want an error containing %q", tc.url, err, tc.want)
			}
		})
	}
}
