//go:build e2e

package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubeletRootDirComponent: the kustomization docs/csi.md shows for a
// kubelet with another --root-dir (deploy/components/kubelet-root-dir and
// a generated ConfigMap) renders the same DaemonSet as the chart's
// kubeletRootDir, for the csi overlay, the one with the webhook and the
// Secrets mode's, and applies no ConfigMap.
func TestKubeletRootDirComponent(t *testing.T) {
	kustomize := tool(t, "KUSTOMIZE_BIN", "kustomize")
	for _, tc := range []struct {
		overlay string
		values  []string
	}{
		{"deploy/overlays/csi", nil},
		{"deploy/overlays/csi-webhook", []string{"webhook.enabled=true"}},
		{"deploy/overlays/csi-secrets", []string{"csi.readAs=pod", "csi.secrets.enabled=true"}},
	} {
		dir := t.TempDir()
		overlay, err := filepath.Rel(dir, pinImage(t, tc.overlay))
		if err != nil {
			t.Fatal(err)
		}
		component, err := filepath.Rel(dir, filepath.Join(repoRoot(), "deploy/components/kubelet-root-dir"))
		if err != nil {
			t.Fatal(err)
		}
		kustomization := "resources:\n- " + overlay + "\ncomponents:\n- " + component + `
configMapGenerator:
- name: nodeagent-kubelet-root-dir
  literals:
  - kubeletRootDir=/data/kubelet
  options:
    disableNameSuffixHash: true
    annotations:
      config.kubernetes.io/local-config: "true"
`
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
			t.Fatal(err)
		}
		rendered := map[string]object{}
		for _, o := range render(t, kustomize, "build", dir) {
			rendered[key(o)] = o
			if o["kind"] == "ConfigMap" {
				t.Errorf("%s: the component's ConfigMap is in the output: %v", tc.overlay, key(o))
			}
		}
		chart := map[string]object{}
		args := []string{"--set", "mode=csi", "--set", "kubeletRootDir=/data/kubelet"}
		for _, v := range tc.values {
			args = append(args, "--set", v)
		}
		for _, o := range helmTemplate(t, args...) {
			chart[key(o)] = normalize(o)
		}
		ds := "DaemonSet/nodeagent"
		if rendered[ds] == nil {
			t.Fatalf("%s: no %s", tc.overlay, ds)
		}
		for _, d := range diff(ds, chart[ds], rendered[ds]) {
			t.Errorf("%s: %s", tc.overlay, d)
		}
	}
}

// TestNamespaceAdmitsTheAgents: the namespace the overlays create enforces
// the privileged Pod Security level, the only one that admits the agents'
// hostPath volumes, and sets nothing else of Pod Security.
func TestNamespaceAdmitsTheAgents(t *testing.T) {
	kustomize := tool(t, "KUSTOMIZE_BIN", "kustomize")
	for _, part := range []string{"deploy/overlays/after", "deploy/overlays/csi"} {
		for _, o := range render(t, kustomize, "build", pinImage(t, part)) {
			if o["kind"] != "Namespace" {
				continue
			}
			labels, _ := lookup(o, "metadata", "labels").(map[string]interface{})
			var podSecurity []string
			for k, v := range labels {
				if strings.HasPrefix(k, "pod-security.kubernetes.io/") {
					podSecurity = append(podSecurity, fmt.Sprintf("%s=%v", k, v))
				}
			}
			if fmt.Sprint(podSecurity) != "[pod-security.kubernetes.io/enforce=privileged]" {
				t.Errorf("%s: the namespace's Pod Security labels are %v, want pod-security.kubernetes.io/enforce=privileged alone", part, podSecurity)
			}
		}
	}
}
