package check

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// root is the repository root, seen from this package's folder.
const root = "../.."

// manifests are the decoded objects of deploy/k8s, by kind.
type manifests struct {
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
}

// load strictly decodes every document of every manifest in deploy/k8s
// (the chart values file is not a manifest).
func load(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "deploy/k8s/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/k8s: %v", err)
	}
	m := &manifests{}
	for _, f := range files {
		if filepath.Base(f) == "redis-values.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			where := fmt.Sprintf("%s document %d", filepath.Base(f), i+1)
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			var obj any
			switch head.APIVersion + " " + head.Kind {
			case "apps/v1 Deployment":
				d := &appsv1.Deployment{}
				m.deployments, obj = append(m.deployments, d), d
			case "v1 Service":
				s := &corev1.Service{}
				m.services, obj = append(m.services, s), s
			case "autoscaling/v2 HorizontalPodAutoscaler":
				h := &autoscalingv2.HorizontalPodAutoscaler{}
				m.hpas, obj = append(m.hpas, h), h
			default:
				t.Fatalf("%s: kind %q of %q is not checked here", where, head.Kind, head.APIVersion)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s does not decode strictly into %s %s: %v", where, head.APIVersion, head.Kind, err)
			}
		}
	}
	return m
}

func (m *manifests) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	for _, d := range m.deployments {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no Deployment %s", name)
	return nil
}

// matches reports whether selector selects labels.
func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// env is a container's environment variable, "" when absent.
func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// hasPort reports whether c declares port p (a name or a number).
func hasPort(c corev1.Container, p intstr.IntOrString) bool {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return true
		}
	}
	return false
}

func TestManifests(t *testing.T) {
	m := load(t)
	// Variables the mcpq binary reads (cmd/mcpq is its only reader).
	var src bytes.Buffer
	cmdFiles, _ := filepath.Glob(filepath.Join(root, "cmd/mcpq/*.go"))
	for _, f := range cmdFiles {
		b, _ := os.ReadFile(f)
		src.Write(b)
	}
	for _, d := range m.deployments {
		t.Run("Deployment "+d.Name, func(t *testing.T) {
			spec := d.Spec.Template.Spec
			if d.Spec.Selector == nil || !matches(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
				t.Errorf("selector %v does not select the pod labels %v", d.Spec.Selector, d.Spec.Template.Labels)
			}
			if sc := spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
				sc.RunAsUser == nil || *sc.RunAsUser == 0 {
				t.Errorf("pod does not run as a non-root user: %+v", spec.SecurityContext)
			}
			if len(spec.Containers) != 1 {
				t.Fatalf("%d containers, want 1", len(spec.Containers))
			}
			c := spec.Containers[0]
			if c.Image == "" || len(c.Args) == 0 || (c.Args[0] != "frontend" && c.Args[0] != "worker") {
				t.Errorf("container runs image %q with args %v, want mcpq frontend or worker", c.Image, c.Args)
			}
			for what, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
				want := map[string]string{"readiness": "/readyz", "liveness": "/healthz"}[what]
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || !hasPort(c, p.HTTPGet.Port) {
					t.Errorf("%s probe %+v, want GET %s on a declared port", what, p, want)
				}
			}
			if c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
				t.Errorf("container may escalate privileges")
			}
			if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
				t.Errorf("no memory limit")
			}
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "MCPQ_") && !strings.Contains(src.String(), `"`+e.Name+`"`) {
					t.Errorf("env %s is read nowhere in cmd/mcpq", e.Name)
				}
			}
			if c.Args[0] != "worker" {
				return
			}
			// The drain: the pod is killed terminationGracePeriodSeconds
			// after SIGTERM; jobs get MCPQ_SHUTDOWN_TIMEOUT (default 10s),
			// and the worker needs a few seconds after it to re-queue and
			// write (at least 10 s of margin).
			drain := 10 * time.Second
			if v := env(c, "MCPQ_SHUTDOWN_TIMEOUT"); v != "" {
				var err error
				if drain, err = time.ParseDuration(v); err != nil {
					t.Fatalf("MCPQ_SHUTDOWN_TIMEOUT=%q: %v", v, err)
				}
			}
			if spec.TerminationGracePeriodSeconds == nil {
				t.Fatalf("no terminationGracePeriodSeconds: the default 30 s does not follow the drain %v", drain)
			}
			grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
			if grace < drain+10*time.Second || grace > drain+30*time.Second {
				t.Errorf("terminationGracePeriodSeconds %v does not match the drain %v (want drain + 10..30 s)", grace, drain)
			}
			if env(c, "MCPQ_METRICS_ADDR") == "" {
				t.Errorf("worker serves no /metrics, /healthz, /readyz: MCPQ_METRICS_ADDR unset")
			}
			if slices.Contains(c.Args, "gpu=2") || strings.Contains(d.Name, "gpu") {
				if spec.NodeSelector["nvidia.com/gpu.present"] != "true" {
					t.Errorf("GPU worker without a GPU node selector: %v", spec.NodeSelector)
				}
				if q, ok := c.Resources.Limits["nvidia.com/gpu"]; !ok || q.Value() < 1 {
					t.Errorf("GPU worker requests no nvidia.com/gpu")
				}
			}
		})
	}
	fe := m.deployment(t, "mcpq-frontend")
	feC := fe.Spec.Template.Spec.Containers[0]
	found := false
	for _, s := range m.services {
		if !matches(s.Spec.Selector, fe.Spec.Template.Labels) {
			continue
		}
		found = true
		for _, p := range s.Spec.Ports {
			if !hasPort(feC, p.TargetPort) {
				t.Errorf("Service %s port %s targets %s, which the front end does not declare", s.Name, p.Name, p.TargetPort.String())
			}
		}
	}
	if !found {
		t.Errorf("no Service selects the front end")
	}
	if len(m.hpas) == 0 {
		t.Errorf("no HorizontalPodAutoscaler")
	}
	for _, h := range m.hpas {
		ref := h.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || ref.Name != fe.Name {
			t.Errorf("HPA %s scales %+v, want the front-end Deployment", h.Name, ref)
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
			t.Errorf("HPA %s replicas %v..%d, want at least 2 and max >= min", h.Name, h.Spec.MinReplicas, h.Spec.MaxReplicas)
		}
	}
	for _, name := range []string{"mcpq-worker-gpu", "mcpq-worker-cpu"} {
		m.deployment(t, name)
	}
}

// TestRedisValues: the chart values carry the Redis settings mcpq needs
// (docs/redis.md "Settings for production").
func TestRedisValues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "deploy/k8s/redis-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Architecture        string `json:"architecture"`
		CommonConfiguration string `json:"commonConfiguration"`
		Sentinel            struct {
			Enabled bool `json:"enabled"`
		} `json:"sentinel"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	conf := map[string]string{}
	for _, line := range strings.Split(v.CommonConfiguration, "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			conf[k] = val
		}
	}
	for k, want := range map[string]string{"appendonly": "yes", "maxmemory-policy": "noeviction",
		"hash-max-listpack-value": "1024"} {
		if conf[k] != want {
			t.Errorf("redis %s = %q, want %q", k, conf[k], want)
		}
	}
	if v.Architecture != "replication" || !v.Sentinel.Enabled {
		t.Errorf("architecture %q, sentinel %v: want replication with sentinels", v.Architecture, v.Sentinel.Enabled)
	}
}

// TestDockerfile: multi-stage, built by scripts/build-static (which
// scripts/test runs too), and the final stage runs as non-root.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var froms []string
	user, built := "", false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			froms = append(froms, line)
			user = "" // USER is per stage
		case "USER":
			user = f[1]
		case "RUN":
			built = built || strings.Contains(line, "./scripts/build-static")
		}
	}
	if len(froms) < 2 {
		t.Errorf("%d stages, want a build stage and a run stage", len(froms))
	}
	if !built {
		t.Errorf("no stage runs ./scripts/build-static")
	}
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("final stage runs as %q, want a non-root USER", user)
	}
	if last := froms[len(froms)-1]; !strings.Contains(last, "static") && !strings.Contains(last, "scratch") {
		t.Errorf("final stage %q is not a static base (the binary needs no libc)", last)
	}
}
