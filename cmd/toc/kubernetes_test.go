package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const kubernetesFile = "deploy/kubernetes/toc.yaml"

// Issue 37, item 4: the Kubernetes manifests decode strictly into the
// API's own types (an unknown or misspelt field, or a value of the wrong
// type, fails), and say what docs/operations.md (Deploying) promises: three members whose
// ids are their pod names, probes on /readyz and /healthz, a delay before
// a member stops answering and a grace period above it and
// --shutdown-grace, tokens and secrets from a Secret, one member
// down at a time, and only environment variables toc serve reads.
func TestKubernetesManifests(t *testing.T) {
	data, err := os.ReadFile(kubernetesFile)
	if err != nil {
		t.Fatal(err)
	}
	var (
		config *corev1.ConfigMap
		sts    *appsv1.StatefulSet
		pdb    *policyv1.PodDisruptionBudget
		svcs   []*corev1.Service
	)
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var obj any
		switch meta.APIVersion + " " + meta.Kind {
		case "v1 ConfigMap":
			config = &corev1.ConfigMap{}
			obj = config
		case "v1 Service":
			svcs = append(svcs, &corev1.Service{})
			obj = svcs[len(svcs)-1]
		case "apps/v1 StatefulSet":
			sts = &appsv1.StatefulSet{}
			obj = sts
		case "policy/v1 PodDisruptionBudget":
			pdb = &policyv1.PodDisruptionBudget{}
			obj = pdb
		default:
			t.Fatalf("document %d: %s %s, not one this test knows", i, meta.APIVersion, meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("document %d (%s): %v", i, meta.Kind, err)
		}
	}
	if config == nil || sts == nil || pdb == nil || len(svcs) != 2 {
		t.Fatalf("want a ConfigMap, a StatefulSet, a PodDisruptionBudget and two Services")
	}

	// Every variable names a flag of toc serve, as its usage lists them.
	usage, _ := exec.Command(tocBin, "serve", "-h").CombinedOutput()
	known := map[string]bool{}
	for _, m := range regexp.MustCompile(`env (TOC_[A-Z0-9_]+)`).FindAllStringSubmatch(string(usage), -1) {
		known[m[1]] = true
	}
	if len(known) < 20 {
		t.Fatalf("toc serve -h lists %d variables:\n%s", len(known), usage)
	}
	pod := sts.Spec.Template
	c := pod.Spec.Containers[0]
	env := map[string]corev1.EnvVar{}
	for k, v := range config.Data {
		env[k] = corev1.EnvVar{Name: k, Value: v}
	}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for name := range env {
		if !known[name] && name != "GOMEMLIMIT" { // the Go runtime's own
			t.Errorf("%s is not a variable of toc serve", name)
		}
	}
	if ref := c.EnvFrom; len(ref) != 1 || ref[0].ConfigMapRef == nil || ref[0].ConfigMapRef.Name != config.Name {
		t.Errorf("the container takes its environment from %+v, want ConfigMap %s", ref, config.Name)
	}

	if r := sts.Spec.Replicas; r == nil || *r != 3 {
		t.Errorf("replicas %v, want 3", r)
	}
	if f := env["TOC_MEMBER_ID"].ValueFrom; f == nil || f.FieldRef == nil || f.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("TOC_MEMBER_ID is %+v, want the pod's name", env["TOC_MEMBER_ID"])
	}
	for _, name := range []string{"TOC_API_TOKEN", "TOC_WEBHOOK_SECRET", "TOC_MYSQL_DSN"} {
		if f := env[name].ValueFrom; f == nil || f.SecretKeyRef == nil {
			t.Errorf("%s is %+v, want it from a Secret", name, env[name])
		}
	}
	if env["TOC_ZK"].Value == "" || env["TOC_MIGRATE"].Value != "false" {
		t.Errorf("TOC_ZK %q, TOC_MIGRATE %q: want a cluster that migrates only when asked", env["TOC_ZK"].Value, env["TOC_MIGRATE"].Value)
	}
	grace, err := time.ParseDuration(env["TOC_SHUTDOWN_GRACE"].Value)
	if err != nil {
		t.Fatalf("TOC_SHUTDOWN_GRACE: %v", err)
	}
	delay, err := time.ParseDuration(env["TOC_SHUTDOWN_DELAY"].Value)
	if err != nil || delay <= 0 {
		t.Fatalf("TOC_SHUTDOWN_DELAY %q (%v): want the time for the Service to stop sending", env["TOC_SHUTDOWN_DELAY"].Value, err)
	}
	if p := pod.Spec.TerminationGracePeriodSeconds; p == nil || time.Duration(*p)*time.Second < delay+grace+10*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v, want at least 10 s above --shutdown-delay %v and --shutdown-grace %v", p, delay, grace)
	}
	for probe, path := range map[*corev1.Probe]string{c.ReadinessProbe: "/readyz", c.LivenessProbe: "/healthz", c.StartupProbe: "/healthz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != c.Ports[0].Name {
			t.Errorf("a probe is %+v, want GET %s on port %s", probe, path, c.Ports[0].Name)
		}
	}
	if !strings.HasSuffix(env["TOC_ADDR"].Value, ":"+strconv.Itoa(int(c.Ports[0].ContainerPort))) {
		t.Errorf("TOC_ADDR %q, container port %d", env["TOC_ADDR"].Value, c.Ports[0].ContainerPort)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: want CPU and memory requests and a memory limit", c.Resources)
	}
	// The runtime's soft limit lies under the container's hard one, so
	// that the collector works harder before the kernel kills the pod.
	mib, err := strconv.ParseInt(strings.TrimSuffix(env["GOMEMLIMIT"].Value, "MiB"), 10, 64)
	if limit := c.Resources.Limits.Memory().Value(); err != nil || mib<<20 >= limit {
		t.Errorf("GOMEMLIMIT %q (%v): want MiB under the memory limit of %d bytes", env["GOMEMLIMIT"].Value, err, limit)
	}
	if s := c.SecurityContext; s == nil || s.ReadOnlyRootFilesystem == nil || !*s.ReadOnlyRootFilesystem {
		t.Errorf("the container's root file system is writable")
	}
	if pod.Spec.SecurityContext == nil || pod.Spec.SecurityContext.RunAsNonRoot == nil || !*pod.Spec.SecurityContext.RunAsNonRoot {
		t.Errorf("the pod may run as root")
	}

	labels := pod.Labels
	matches := func(sel map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.Selector == nil || !matches(pdb.Spec.Selector.MatchLabels) {
		t.Errorf("the disruption budget %+v: want one member down at a time, of these pods", pdb.Spec)
	}
	if !matches(sts.Spec.Selector.MatchLabels) {
		t.Errorf("the StatefulSet's selector %v does not match its pods' labels %v", sts.Spec.Selector.MatchLabels, labels)
	}
	for _, s := range svcs {
		if !matches(s.Spec.Selector) {
			t.Errorf("Service %s selects %v, not the pods (%v)", s.Name, s.Spec.Selector, labels)
		}
	}
	if sts.Spec.ServiceName != svcs[1].Name || svcs[1].Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("the StatefulSet's service %q, want the headless %s", sts.Spec.ServiceName, svcs[1].Name)
	}
}
