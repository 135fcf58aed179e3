package daemonset

import (
	"slices"
	"testing"
)

func TestFlagValue(t *testing.T) {
	args := []string{"run", "--sync-frequency=30s", "--kube-api-qps", "20", "--sync-frequency", "45s"}
	if v, ok := flagValue(args, "sync-frequency"); !ok || v != "45s" {
		t.Errorf("sync-frequency = %q, %v; want the last one, 45s", v, ok)
	}
	if v, ok := flagValue(args, "kube-api-qps"); !ok || v != "20" {
		t.Errorf("kube-api-qps = %q, %v; want 20", v, ok)
	}
	if _, ok := flagValue(args, "ttl"); ok {
		t.Error("found a flag that is not there")
	}
	if _, ok := flagValue([]string{"run", "--kube-api-qps"}, "kube-api-qps"); ok {
		t.Error("a flag without its value counts as absent")
	}
}

func TestWithFlag(t *testing.T) {
	args := []string{"run", "--cache-invalidation", "every-sync", "--root-dir=/var/lib/nodeagent", "--cache-invalidation=first-reference"}
	got := withFlag(args, "cache-invalidation", "every-sync")
	want := []string{"run", "--root-dir=/var/lib/nodeagent", "--cache-invalidation=every-sync"}
	if !slices.Equal(got, want) {
		t.Errorf("withFlag = %q, want %q", got, want)
	}
	if args[1] != "--cache-invalidation" {
		t.Error("withFlag changed its input")
	}
	got = withFlag([]string{"run"}, "sync-frequency", "10s")
	if !slices.Equal(got, []string{"run", "--sync-frequency=10s"}) {
		t.Errorf("withFlag appended %q", got)
	}
}
