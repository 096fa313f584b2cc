package command

import (
	"fmt"
	"net/netip"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// envAllowNetworks names the networks the tools file lets the program's
// URL fetches reach although they are not public (loopback, private,
// link-local, metadata): comma-separated prefixes, "" for none. mcpq does
// not fetch for the program; the program's fetcher enforces it
// (examples/lib/safefetch.py, docs/tools.md "Fetching URLs safely").
const envAllowNetworks = "MCPQ_ALLOW_NETWORKS"

// allowNetworks reads the field allowNetworks: a list of IP addresses or
// prefixes (127.0.0.1, 10.0.0.0/8, ::1), each read with $VARS expanded
// (a fleet names its own); an item that expands to nothing is dropped, so
// a file can say "${INGEST_ALLOW_NETWORKS}" and allow nothing where it is
// unset.
func allowNetworks(v *yaml.Node) ([]string, error) {
	items, err := stringList(v, "a list of IP addresses or prefixes", "")
	if err != nil {
		return nil, err
	}
	var out []string
	for i, raw := range items {
		for _, p := range strings.Split(os.ExpandEnv(raw), ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			n, err := parseNetwork(p)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", v.Content[i].Line, err)
			}
			out = append(out, n.String())
		}
	}
	return out, nil
}

// parseNetwork reads an IP address (a prefix of its full length) or a
// prefix such as 10.0.0.0/8.
func parseNetwork(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not an IP prefix such as 10.0.0.0/8", s)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or prefix", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// checkNetworks validates Spec.AllowNetworks (set from Go, not a file).
func checkNetworks(nets []string) error {
	for _, n := range nets {
		if _, err := parseNetwork(n); err != nil {
			return fmt.Errorf("field allowNetworks: %w", err)
		}
	}
	return nil
}
