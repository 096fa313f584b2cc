package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/mcpq/mcpq/frontend"
	"github.com/mcpq/mcpq/internal/access"
)

// authFlags are the front end's authentication settings.
type authFlags struct {
	keysFile       string
	allowAnonymous bool
}

func (a *authFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.keysFile, "api-keys-file", env("MCPQ_API_KEYS_FILE", ""), `file of static API keys, one "principal key" per line (env MCPQ_API_KEYS_FILE)`)
	fs.BoolVar(&a.allowAnonymous, "allow-anonymous", env("MCPQ_ALLOW_ANONYMOUS", "") == "true",
		"serve requests without an Authorization header as the anonymous principal (env MCPQ_ALLOW_ANONYMOUS=true)")
}

// staticKeys reads MCPQ_API_KEYS ("principal:key,principal:key") and the keys file.
func (a *authFlags) staticKeys() (map[string]string, error) {
	keys := map[string]string{}
	for _, pair := range splitList(os.Getenv("MCPQ_API_KEYS")) {
		p, k, ok := strings.Cut(pair, ":")
		p, k = strings.TrimSpace(p), strings.TrimSpace(k) // "alice : key" is alice's key, not "alice "'s
		if !ok || p == "" || k == "" {
			return nil, fmt.Errorf(`MCPQ_API_KEYS: %q is not "principal:key"`, pair)
		}
		keys[k] = p
	}
	if a.keysFile == "" {
		return keys, nil
	}
	f, err := os.Open(a.keysFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf(`%s:%d: want "principal key"`, a.keysFile, n)
		}
		keys[fields[1]] = fields[0]
	}
	return keys, sc.Err()
}

// frontendAuth is the production authenticator: static keys plus managed
// keys in Redis; anonymous only with --allow-anonymous.
func (a *authFlags) frontendAuth(rdb redis.UniversalClient, prefix string) (frontend.Authenticator, error) {
	static, err := a.staticKeys()
	if err != nil {
		return nil, err
	}
	return frontend.NewKeyAuth(static, access.New(rdb, prefix, nil), a.allowAnonymous), nil
}

// devAuth is mcpq dev's: anonymous unless keys are configured.
func (a *authFlags) devAuth(rdb redis.UniversalClient) (frontend.Authenticator, error) {
	static, err := a.staticKeys()
	if err != nil {
		return nil, err
	}
	if len(static) == 0 {
		return frontend.Anonymous{}, nil
	}
	return frontend.NewKeyAuth(static, access.New(rdb, "", nil), a.allowAnonymous), nil
}
