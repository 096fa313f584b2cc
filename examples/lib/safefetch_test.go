package lib_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpq/mcpq/examples/internal/exampletest"
)

// TestSafefetchRefusesNonPublicAddresses: safefetch.check_address refuses
// each kind of address that is not public, in IPv4, IPv6 and IPv4-mapped
// form, unless $MCPQ_ALLOW_NETWORKS holds it; public addresses pass.
func TestSafefetchRefusesNonPublicAddresses(t *testing.T) {
	exampletest.Need(t, "apt-get install python3", "python3")
	const script = `
import safefetch, sys
for line in sys.stdin.read().split("\n"):
    if not line:
        continue
    allow, addr = line.split(" ")
    nets = [safefetch.ipaddress.ip_network(a) for a in allow.split(",") if a != "-"]
    try:
        safefetch.check_address("h", addr, nets)
        print("ok")
    except safefetch.Refused as e:
        print(str(e).split(", a ")[1].split(" ")[0])
`
	cases := []struct{ in, want string }{ // "allow address", what check_address says
		{"- 127.0.0.1", "loopback"},
		{"- 10.1.2.3", "private"},
		{"- 192.168.0.9", "private"},
		{"- 169.254.169.254", "link-local"},
		{"- 100.100.100.200", "non-public"}, // shared address space (Alibaba's metadata)
		{"- 0.0.0.0", "private"},
		{"- ::1", "loopback"},
		{"- fd00:ec2::254", "private"},
		{"- fe80::1%eth0", "link-local"},
		{"- ::ffff:127.0.0.1", "loopback"},
		{"- 8.8.8.8", "ok"},
		{"- 2606:4700:4700::1111", "ok"},
		{"127.0.0.1/32 127.0.0.1", "ok"},
		{"127.0.0.1/32 127.0.0.2", "loopback"},
		{"127.0.0.0/8 ::ffff:127.0.0.9", "ok"},
		{"10.0.0.0/8,::1/128 ::1", "ok"},
	}
	var in strings.Builder
	for _, c := range cases {
		in.WriteString(c.in + "\n")
	}
	cmd := exec.Command("python3", "-c", script)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(cases) {
		t.Fatalf("%d answers for %d cases: %s", len(got), len(cases), out)
	}
	for i, c := range cases {
		if got[i] != c.want {
			t.Errorf("allow %q: %q, want %q", c.in, got[i], c.want)
		}
	}
}
