package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDispatch(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"usage", nil, 0, "Commands:", ""},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"version", []string{"version"}, 0, "nodeagent ", ""},
		{"version help", []string{"version", "--help"}, 0, "--output", ""},
		{"bad version output", []string{"version", "-o", "yaml"}, 1, "", "unknown --output"},
		{"run: unknown strategy", []string{"run", "--configmap-strategy=poll"}, 1, "", "choose one of [Watch Cache Get]"},
		{"run: unknown invalidation", []string{"run", "--cache-invalidation=never"}, 1, "", "choose one of [every-sync first-reference]"},
		{"run: empty node name", []string{"run", "--node-name=", "--kubeconfig=/dev/null"}, 1, "", "--node-name is empty"},
		{"run: bad log format", []string{"run", "--logging-format=xml"}, 1, "", "--logging-format"},
		{"compare: bad modes", []string{"compare", "--modes=poll"}, 1, "", "unknown mode"},
		{"compare: no nodes", []string{"compare", "--nodes=0"}, 1, "", "--nodes must be at least 1"},
		{"compare: help names the kubeconfig flag", []string{"compare", "--help"}, 0, "--kubeconfig string", ""},
		{"compare: node selector without daemonset", []string{"compare", "--node-selector=pool=a"}, 1, "", "--node-selector belongs to --fleet daemonset"},
		{"compare: daemonset with ttl", []string{"compare", "--daemonset=nodeagent/nodeagent", "--kubeconfig=/dev/null", "--ttl=5s"}, 1, "", "--ttl is written on the Nodes the run creates"},
		{"compare: reference kubelets need the local control plane", []string{"compare", "--kubeconfig=/nonexistent", "--modes=kubelet-v1.37,first-reference"}, 1, "", "leave out --kubeconfig"},
		{"compare: reference kubelets not beside a daemonset", []string{"compare", "--daemonset=nodeagent/nodeagent", "--kubeconfig=/nonexistent", "--modes=kubelet-v1.28"}, 1, "", "not with --fleet daemonset"},
		{"compare: the fleet by name", []string{"compare", "--fleet=DaemonSet", "--kubeconfig=/nonexistent", "--metrics-address=:9"}, 1, "", "--metrics-address belongs to --fleet in-process, not daemonset"},
		{"compare: an unknown fleet", []string{"compare", "--fleet=cloud"}, 1, "", "choose one of in-process, processes, daemonset"},
		{"compare: two fleets asked for", []string{"compare", "--agent-processes", "--daemonset=a/b"}, 1, "", "choose one"},
		{"compare: 1,000 nodes fit the machine at the kubelet's S", []string{"compare", "--nodes=1000", "--pods-per-node=30", "--kubeconfig=/nonexistent"}, 1, "", "finding the cluster"},
		{"compare: 1,000 nodes at S = 5 s do not", []string{"compare", "--nodes=1000", "--pods-per-node=30", "--sync-frequency=5s", "--kubeconfig=/nonexistent"}, 1, "", "in total"},
		{"compare: update rate not with a daemonset", []string{"compare", "--daemonset=nodeagent/nodeagent", "--kubeconfig=/nonexistent", "--update-rate=5"}, 1, "", "not with --fleet daemonset"},
		{"compare: agent processes need the local control plane", []string{"compare", "--kubeconfig=/nonexistent", "--agent-processes"}, 1, "", "--fleet processes runs its agents as simulated nodes of a local control plane"},
		{"analyze: help", []string{"analyze", "--help"}, 0, "--assume-strategy", ""},
		{"analyze: unknown assumed strategy", []string{"analyze", "--assume-strategy=Poll"}, 1, "", "choose one of [Watch Cache Get]"},
		{"analyze: bad top", []string{"analyze", "--top=0", "--assume-sync-frequency=0s"}, 1, "", "--assume-sync-frequency must be positive"},
		{"analyze: unknown output", []string{"analyze", "-o", "yaml"}, 1, "", "choose one of [table json markdown]"},
		{"analyze: no kubeconfig", []string{"analyze", "--kubeconfig=/nonexistent"}, 1, "", "finding the cluster"},
		{"analyze: --serve with one run's flags", []string{"analyze", "--serve=:0", "-o", "json", "--fail-on=missing"}, 1, "", "--output, --fail-on apply to one run, not to --serve"},
		{"analyze: --events without --serve", []string{"analyze", "--events"}, 1, "", "--events and --profiling apply to --serve"},
		{"analyze: --max-events-per-report 0", []string{"analyze", "--serve=:0", "--events", "--max-events-per-report=0"}, 1, "", "--max-events-per-report must be at least 1"},
		{"analyze: no requests allowed", []string{"analyze", "--kube-api-qps=0"}, 1, "", "--kube-api-qps must be positive"},
		{"uninstall-check: help", []string{"uninstall-check", "--help"}, 0, "--driver-name", ""},
		{"uninstall-check: no arguments", []string{"uninstall-check", "pods"}, 1, "", "unexpected arguments"},
		{"uninstall-check: no cluster", []string{"uninstall-check", "--kubeconfig=/nonexistent"}, 1, "", "finding the cluster"},
		{"csi: events need a burst", []string{"csi", "--node-name=n", "--event-burst=0"}, 1, "", "--event-qps must be at least 0 and --event-burst positive"},
		{"analyze: unknown finding type", []string{"analyze", "--fail-on=staleSinceStart,stale"}, 1, "", `unknown finding type "stale"`},
		{"compare: daemonset, bad scenario", []string{"compare", "--daemonset=nodeagent/nodeagent", "--kubeconfig=/nonexistent", "--pods-per-node=0"}, 1, "", "--pods-per-node must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := dispatch(tt.args, &stdout, &stderr)
			if code != tt.wantCode || !strings.Contains(stdout.String(), tt.wantStdout) || !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("code %d (want %d)\nstdout: %s(want %q)\nstderr: %s(want %q)", code, tt.wantCode, stdout.String(), tt.wantStdout, stderr.String(), tt.wantStderr)
			}
		})
	}
}

// compare --daemonset, like analyze and kubectl, finds the cluster through
// $KUBECONFIG when --kubeconfig is not given.
func TestCompareDaemonSetFindsTheClusterAsKubectlDoes(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"compare", "--daemonset=nodeagent/nodeagent"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "127.0.0.1:1") {
		t.Errorf("code %d, stderr %s; want a failure to reach $KUBECONFIG's server, https://127.0.0.1:1", code, stderr.String())
	}
}

func TestVersionJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := dispatch([]string{"version", "-o", "json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var v map[string]string
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"version", "gitCommit", "goVersion", "platform"} {
		if v[key] == "" {
			t.Errorf("version JSON lacks %q: %v", key, v)
		}
	}
}

// As kubectl's plugin kubectl-nodeagent, help and errors name the command
// the way the user typed it.
func TestProgramName(t *testing.T) {
	for argv0, want := range map[string]string{
		"/usr/local/bin/kubectl-nodeagent": "kubectl nodeagent",
		"_output/bin/nodeagent":            "nodeagent",
		"nodeagent.test":                   "nodeagent",
	} {
		if got := programName(argv0); got != want {
			t.Errorf("programName(%q) = %q, want %q", argv0, got, want)
		}
	}
}
