//go:build e2e

// Package deploy tests what deploy/ ships without a cluster: the Helm chart
// (deploy/helm/nodeagent) renders, in each mode, the objects the kustomize
// overlay of that mode renders, and its values land where they say. `make
// deploy-check` runs it with the pinned helm and kustomize, after helm lint
// and promtool's checks of deploy/prometheus.
package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// object is one rendered manifest document.
type object = map[string]interface{}

// tool is the path of a pinned CLI from the environment (make sets it), or
// _output/bin's.
func tool(t *testing.T, env, name string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		bin = filepath.Join(repoRoot(), "_output", "bin", name)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v; run `make deploy-check`, which builds it", name, err)
	}
	return bin
}

func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..")
}

// render runs a CLI and parses the manifests it prints.
func render(t *testing.T, bin string, args ...string) []object {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = repoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return parse(t, out)
}

func parse(t *testing.T, manifest []byte) []object {
	t.Helper()
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objects []object
	for {
		var o object
		if err := decoder.Decode(&o); err != nil {
			if errors.Is(err, io.EOF) {
				return objects
			}
			t.Fatal(err)
		}
		if len(o) > 0 {
			objects = append(objects, o)
		}
	}
}

func helmTemplate(t *testing.T, args ...string) []object {
	t.Helper()
	return render(t, tool(t, "HELM_BIN", "helm"), append([]string{"template", "nodeagent", "deploy/helm/nodeagent",
		"--namespace", "nodeagent", "--set", "image.tag=" + pinnedTag}, args...)...)
}

// helmOnlyLabels are the labels a chart adds by convention and kustomize's
// overlays do not have: the release's, the chart's and the version's.
var helmOnlyLabels = []string{"app.kubernetes.io/instance", "app.kubernetes.io/managed-by",
	"app.kubernetes.io/version", "helm.sh/chart"}

// normalize removes from o what only Helm adds, so that a chart's object and
// an overlay's compare equal when they mean the same.
func normalize(o object) object {
	for _, path := range [][]string{{"metadata", "labels"}, {"spec", "selector", "matchLabels"}, {"spec", "selector"},
		{"spec", "template", "metadata", "labels"}} {
		if labels, ok := lookup(o, path...).(map[string]interface{}); ok {
			for _, l := range helmOnlyLabels {
				delete(labels, l)
			}
		}
	}
	return o
}

func lookup(o interface{}, path ...string) interface{} {
	for _, p := range path {
		m, ok := o.(map[string]interface{})
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

func key(o object) string {
	return fmt.Sprintf("%v/%v", o["kind"], lookup(o, "metadata", "name"))
}

// diff lists the paths at which a and b differ.
func diff(path string, a, b interface{}) []string {
	am, aok := a.(map[string]interface{})
	bm, bok := b.(map[string]interface{})
	if aok && bok {
		var out []string
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			out = append(out, diff(path+"."+k, am[k], bm[k])...)
		}
		sort.Strings(out)
		return out
	}
	al, aok := a.([]interface{})
	bl, bok := b.([]interface{})
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(a, b) {
		return []string{fmt.Sprintf("%s: chart %v, overlay %v", path, a, b)}
	}
	return nil
}

// TestChartEqualsOverlays renders the chart in each mode and the overlay of
// that mode, and requires the same objects: the overlays' Namespace aside
// (a Helm user creates it labelled), the chart's hooks (its uninstall
// check, which kubectl delete -k has no place for: deploy.md has the
// command), and Helm's own labels. With analyze.enabled the chart adds what
// deploy/analyze-serve renders.
func TestChartEqualsOverlays(t *testing.T) {
	kustomize := tool(t, "KUSTOMIZE_BIN", "kustomize")
	cases := []struct {
		name       string
		set        []string
		kustomizes []string
	}{
		{"before", []string{"mode=before"}, []string{"deploy/overlays/before"}},
		{"after", []string{"mode=after"}, []string{"deploy/overlays/after"}},
		{"watch", []string{"mode=watch"}, []string{"deploy/overlays/watch"}},
		{"csi", []string{"mode=csi"}, []string{"deploy/overlays/csi"}},
		{"csi with the webhook", []string{"mode=csi", "webhook.enabled=true"}, []string{"deploy/overlays/csi-webhook"}},
		{"csi in the Secrets mode", []string{"mode=csi", "csi.readAs=pod", "csi.secrets.enabled=true"}, []string{"deploy/overlays/csi-secrets"}},
		{"after with analyze", []string{"mode=after", "analyze.enabled=true"}, []string{"deploy/overlays/after", "deploy/analyze-serve"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			chart := map[string]object{}
			var args []string
			for _, kv := range tc.set {
				args = append(args, "--set", kv)
			}
			for _, o := range helmTemplate(t, args...) {
				if lookup(o, "metadata", "annotations", "helm.sh/hook") == nil {
					chart[key(o)] = normalize(o)
				}
			}
			overlay := map[string]object{}
			for _, dir := range tc.kustomizes {
				for _, o := range render(t, kustomize, "build", pinImage(t, dir)) {
					if o["kind"] != "Namespace" {
						overlay[key(o)] = o
					}
				}
			}
			for k, want := range overlay {
				got, ok := chart[k]
				if !ok {
					t.Errorf("%s: in the overlay, not in the chart", k)
					continue
				}
				for _, d := range diff(k, got, want) {
					t.Error(d)
				}
			}
			for k := range chart {
				if _, ok := overlay[k]; !ok {
					t.Errorf("%s: in the chart, not in the overlay", k)
				}
			}
		})
	}
}

// TestChartValues sets every value the chart documents and finds each where
// it belongs.
func TestChartValues(t *testing.T) {
	objects := helmTemplate(t, "--set", "mode=before", "--set", "syncFrequency=30s",
		"--set", "image.repository=registry.example/nodeagent", "--set", "image.tag=v1.2.3",
		"--set", "image.pullPolicy=Always", "--set", "httpAddress=0.0.0.0:9100", "--set", "rootDir=/var/lib/na",
		"--set", "nodeSelector.pool=general", "--set", "tolerations=null", "--set", "extraArgs={--kube-api-qps=20}",
		"--set", "resources.requests.cpu=50m", "--set", "podMonitor.enabled=true", "--set", "podMonitor.labels.release=prom")
	byKey := map[string]object{}
	for _, o := range objects {
		byKey[key(o)] = o
	}
	ds := byKey["DaemonSet/nodeagent"]
	if ds == nil {
		t.Fatalf("no DaemonSet/nodeagent among %d objects", len(objects))
	}
	container := lookup(ds, "spec", "template", "spec", "containers").([]interface{})[0].(map[string]interface{})
	args := fmt.Sprint(container["args"])
	if want := "[run --root-dir=/var/lib/na --http-address=0.0.0.0:9100 --configmap-strategy=Cache " +
		"--cache-invalidation=every-sync --logging-format=json --sync-frequency=30s --kube-api-qps=20]"; args != want {
		t.Errorf("args %s, want %s", args, want)
	}
	for what, pair := range map[string][2]interface{}{
		"image":             {container["image"], "registry.example/nodeagent:v1.2.3"},
		"pull policy":       {container["imagePullPolicy"], "Always"},
		"port":              {lookup(container["ports"].([]interface{})[0], "containerPort"), float64(9100)},
		"scrape port":       {lookup(ds, "spec", "template", "metadata", "annotations", "prometheus.io/port"), "9100"},
		"cpu request":       {lookup(container, "resources", "requests", "cpu"), "50m"},
		"node selector":     {fmt.Sprint(lookup(ds, "spec", "template", "spec", "nodeSelector")), "map[kubernetes.io/os:linux pool:general]"},
		"tolerations":       {lookup(ds, "spec", "template", "spec", "tolerations"), nil},
		"host path":         {lookup(lookup(ds, "spec", "template", "spec", "volumes").([]interface{})[0], "hostPath", "path"), "/var/lib/na"},
		"podmonitor label":  {lookup(byKey["PodMonitor/nodeagent"], "metadata", "labels", "release"), "prom"},
		"podmonitor target": {fmt.Sprint(lookup(byKey["PodMonitor/nodeagent"], "spec", "podMetricsEndpoints")), "[map[interval:30s path:/metrics port:http relabelings:[map[sourceLabels:[__meta_kubernetes_pod_node_name] targetLabel:node]]]]"},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s: %v, want %v", what, pair[0], pair[1])
		}
	}
	// The release's name names every object; another release does not
	// collide with the first one's ClusterRole.
	other := render(t, tool(t, "HELM_BIN", "helm"), "template", "canary", "deploy/helm/nodeagent", "--namespace", "canary", "--set", "image.tag=v1")
	for _, o := range other {
		if name := lookup(o, "metadata", "name"); name != "canary-nodeagent" {
			t.Errorf("release canary: %s named %v, want canary-nodeagent", o["kind"], name)
		}
	}
}

// TestChartCSIValues: the csi mode's values land where they say, and the
// access check (of the driver reading as itself) brings its one extra
// permission.
func TestChartCSIValues(t *testing.T) {
	objects := helmTemplate(t, "--set", "mode=csi", "--set", "kubeletRootDir=/data/kubelet", "--set", "csi.readAs=driver", "--set", "csi.checkAccess=true")
	byKey := map[string]object{}
	for _, o := range objects {
		byKey[key(o)] = o
	}
	ds := byKey["DaemonSet/nodeagent"]
	container := lookup(ds, "spec", "template", "spec", "containers").([]interface{})[0].(map[string]interface{})
	if args, want := fmt.Sprint(container["args"]), "[csi --state-dir=/var/lib/nodeagent/csi --kubelet-root-dir=/data/kubelet "+
		"--http-address=0.0.0.0:10356 --logging-format=json --read-as=driver --check-access]"; args != want {
		t.Errorf("args %s, want %s", args, want)
	}
	if path := lookup(lookup(ds, "spec", "template", "spec", "volumes").([]interface{})[0], "hostPath", "path"); path != "/data/kubelet" {
		t.Errorf("the kubelet's hostPath is %v, want /data/kubelet", path)
	}
	rules := fmt.Sprint(lookup(byKey["ClusterRole/nodeagent"], "rules"))
	if !strings.Contains(rules, "subjectaccessreviews") || strings.Contains(rules, "pods") {
		t.Errorf("ClusterRole rules %s: want subjectaccessreviews, and no pods", rules)
	}
	if byKey["CSIDriver/configmaps.nodeagent.io"] == nil {
		t.Error("no CSIDriver/configmaps.nodeagent.io")
	}
}

// TestChartCSIReadAsPod: read as the pods (the default), the CSIDriver
// asks the kubelet for each pod's token (for the apiserver's audience,
// renewed at each republish), the driver runs with --read-as=pod, and its
// ClusterRole grants nothing on ConfigMaps; read as the driver, none of it.
func TestChartCSIReadAsPod(t *testing.T) {
	for _, readAs := range []string{"", "pod", "driver"} {
		values := []string{"--set", "mode=csi"}
		if readAs != "" {
			values = append(values, "--set", "csi.readAs="+readAs)
		}
		byKey := map[string]object{}
		for _, o := range helmTemplate(t, values...) {
			byKey[key(o)] = o
		}
		spec := lookup(byKey["CSIDriver/configmaps.nodeagent.io"], "spec")
		tokens, republish := fmt.Sprint(lookup(spec, "tokenRequests")), lookup(spec, "requiresRepublish")
		container := lookup(byKey["DaemonSet/nodeagent"], "spec", "template", "spec", "containers").([]interface{})[0].(map[string]interface{})
		args := fmt.Sprint(container["args"])
		rules := fmt.Sprint(lookup(byKey["ClusterRole/nodeagent"], "rules"))
		asPod := tokens == "[map[audience:]]" && republish == true && strings.Contains(args, "--read-as=pod") && !strings.Contains(rules, "configmaps")
		asDriver := tokens == "<nil>" && republish == nil && strings.Contains(args, "--read-as=driver") && strings.Contains(rules, "configmaps")
		if readAs != "driver" && !asPod || readAs == "driver" && !asDriver {
			t.Errorf("csi.readAs=%s: tokenRequests %s, requiresRepublish %v, args %s, ClusterRole rules %s", readAs, tokens, republish, args, rules)
		}
	}
}

// TestChartCSIKeepsTokens: read as the pods, the driver keeps the pods'
// tokens in csi.tokenDir, a hostPath on the node's /run mounted at its own
// path; read as itself, or with csi.tokenDir empty, it keeps none.
func TestChartCSIKeepsTokens(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{nil, "/run/nodeagent/csi-tokens"},
		{[]string{"csi.secrets.enabled=true"}, "/run/nodeagent/csi-tokens"},
		{[]string{"csi.tokenDir=/run/tokens"}, "/run/tokens"},
		{[]string{"csi.tokenDir="}, ""},
		{[]string{"csi.readAs=driver"}, ""},
	} {
		values := []string{"--set", "mode=csi"}
		for _, kv := range tc.set {
			values = append(values, "--set", kv)
		}
		for _, o := range helmTemplate(t, values...) {
			if key(o) != "DaemonSet/nodeagent" {
				continue
			}
			pod := lookup(o, "spec", "template", "spec")
			container := lookup(pod, "containers").([]interface{})[0]
			args, mounts, volumes := fmt.Sprint(lookup(container, "args")), fmt.Sprint(lookup(container, "volumeMounts")), fmt.Sprint(lookup(pod, "volumes"))
			if tc.want == "" {
				if strings.Contains(args+mounts+volumes, "token") {
					t.Errorf("%v: keeps tokens: args %s, mounts %s, volumes %s", tc.set, args, mounts, volumes)
				}
				continue
			}
			if !strings.Contains(args, "--token-dir="+tc.want) || !strings.Contains(mounts, "mountPath:"+tc.want+" name:token-dir") ||
				!strings.Contains(volumes, "hostPath:map[path:"+tc.want+" type:DirectoryOrCreate] name:token-dir") {
				t.Errorf("%v: args %s, mounts %s, volumes %s; want the tokens kept in %s", tc.set, args, mounts, volumes, tc.want)
			}
		}
	}
}

// TestChartTokensInSecrets: from Kubernetes v1.35 the CSIDriver asks for
// the pods' tokens in the publish call's secrets; before, the field, which
// the apiserver would not know, is left out.
func TestChartTokensInSecrets(t *testing.T) {
	for version, want := range map[string]any{"1.34.0": nil, "1.35.0": true, "1.37.2": true} {
		for _, o := range helmTemplate(t, "--set", "mode=csi", "--kube-version", version) {
			if key(o) != "CSIDriver/configmaps.nodeagent.io" {
				continue
			}
			if got := lookup(o, "spec", "serviceAccountTokenInSecrets"); got != want {
				t.Errorf("Kubernetes %s: serviceAccountTokenInSecrets %v, want %v", version, got, want)
			}
		}
	}
}

// TestChartWebhookCertManager: with a cert-manager issuer the webhook
// serves cert-manager's certificate, which cert-manager injects into the
// configuration, and gets no permission on Secrets or configurations: its
// ClusterRole, reading as the pods, asks SubjectAccessReviews alone, and
// reading as the driver there is none.
func TestChartWebhookCertManager(t *testing.T) {
	byKey := map[string]object{}
	for _, o := range helmTemplate(t, "--set", "mode=csi", "--set", "webhook.enabled=true",
		"--set", "webhook.certManagerIssuer.kind=ClusterIssuer", "--set", "webhook.certManagerIssuer.name=cluster-ca") {
		byKey[key(o)] = o
	}
	cert := byKey["Certificate/nodeagent-webhook"]
	if fmt.Sprint(lookup(cert, "spec", "issuerRef")) != "map[kind:ClusterIssuer name:cluster-ca]" ||
		fmt.Sprint(lookup(cert, "spec", "dnsNames")) != "[nodeagent-webhook.nodeagent.svc nodeagent-webhook.nodeagent.svc.cluster.local]" {
		t.Errorf("Certificate %v", cert)
	}
	container := lookup(byKey["Deployment/nodeagent-webhook"], "spec", "template", "spec", "containers").([]interface{})[0]
	if args := fmt.Sprint(lookup(container, "args")); !strings.Contains(args, "--tls-cert-file=/tls/tls.crt") || strings.Contains(args, "self-signed") {
		t.Errorf("args %s", args)
	}
	if inject := lookup(byKey["MutatingWebhookConfiguration/nodeagent-webhook"], "metadata", "annotations", "cert-manager.io/inject-ca-from"); inject != "nodeagent/nodeagent-webhook" {
		t.Errorf("inject-ca-from %v", inject)
	}
	if byKey["Role/nodeagent-webhook"] != nil {
		t.Error("Role/nodeagent-webhook with cert-manager, which needs none")
	}
	if rules := fmt.Sprint(lookup(byKey["ClusterRole/nodeagent-webhook"], "rules")); rules != "[map[apiGroups:[authorization.k8s.io] resources:[subjectaccessreviews] verbs:[create]]]" {
		t.Errorf("the ClusterRole's rules with cert-manager, reading as the pods: %s", rules)
	}
	for _, o := range helmTemplate(t, "--set", "mode=csi", "--set", "webhook.enabled=true", "--set", "csi.readAs=driver",
		"--set", "webhook.certManagerIssuer.kind=ClusterIssuer", "--set", "webhook.certManagerIssuer.name=cluster-ca") {
		if k := key(o); strings.HasSuffix(k, "/nodeagent-webhook") && strings.Contains(k, "Role") {
			t.Errorf("%s with cert-manager, reading as the driver: it needs none", k)
		}
	}
}

// TestChartAnalyzeValues: the analyzer's values land where they say; each
// optional role is bound only when asked for; it installs alone, without
// the agents; its pod is never one the agents' DaemonSet selects.
func TestChartAnalyzeValues(t *testing.T) {
	byKey := func(set ...string) map[string]object {
		var args []string
		for _, kv := range set {
			args = append(args, "--set", kv)
		}
		objects := map[string]object{}
		for _, o := range helmTemplate(t, args...) {
			objects[key(o)] = o
		}
		return objects
	}
	if objects := byKey(); objects["Deployment/nodeagent-analyze"] != nil || objects["ClusterRole/nodeagent-analyze"] != nil {
		t.Error("analyze is off by default, but the chart renders its objects")
	}
	objects := byKey("analyze.enabled=true", "analyze.listSecrets=true", "analyze.events=true", "analyze.httpAddress=0.0.0.0:9200", "imagePullSecrets[0].name=regcred",
		"analyze.extraArgs={--max-finding-series=50}", "analyze.resources.limits.memory=4Gi", "podMonitor.enabled=true")
	deployment := objects["Deployment/nodeagent-analyze"]
	if deployment == nil {
		t.Fatalf("no Deployment/nodeagent-analyze among %d objects", len(objects))
	}
	container := lookup(deployment, "spec", "template", "spec", "containers").([]interface{})[0].(map[string]interface{})
	for what, pair := range map[string][2]interface{}{
		"command":         {fmt.Sprint(container["command"]), "[/nodeagent-full]"},
		"args":            {fmt.Sprint(container["args"]), "[analyze --serve=0.0.0.0:9200 --events --max-finding-series=50]"},
		"image":           {container["image"], "ghcr.io/nodeagent-io/nodeagent:" + pinnedTag},
		"port":            {lookup(container["ports"].([]interface{})[0], "containerPort"), float64(9200)},
		"scrape port":     {lookup(deployment, "spec", "template", "metadata", "annotations", "prometheus.io/port"), "9200"},
		"memory limit":    {lookup(container, "resources", "limits", "memory"), "4Gi"},
		"replicas":        {lookup(deployment, "spec", "replicas"), float64(1)},
		"pull secrets":    {fmt.Sprint(lookup(deployment, "spec", "template", "spec", "imagePullSecrets")), "[map[name:regcred]]"},
		"agents' secrets": {fmt.Sprint(lookup(objects["DaemonSet/nodeagent"], "spec", "template", "spec", "imagePullSecrets")), "[map[name:regcred]]"},
		"podmonitor pods": {fmt.Sprint(lookup(objects["PodMonitor/nodeagent-analyze"], "spec", "selector", "matchLabels")), "map[app.kubernetes.io/instance:nodeagent app.kubernetes.io/name:nodeagent-analyze]"},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s: %v, want %v", what, pair[0], pair[1])
		}
	}
	if objects["ClusterRoleBinding/nodeagent-analyze-secrets"] == nil || objects["ClusterRoleBinding/nodeagent-analyze-events"] == nil ||
		objects["ClusterRoleBinding/nodeagent-analyze-configz"] != nil {
		t.Error("listSecrets and events: want the secrets and events roles bound and the configz role not")
	}
	alone := byKey("agents.enabled=false", "analyze.enabled=true", "mode=csi", "podMonitor.enabled=true")
	var kinds []string
	for k := range alone {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if want := "ClusterRole/nodeagent-analyze ClusterRole/nodeagent-analyze-configz ClusterRole/nodeagent-analyze-events ClusterRole/nodeagent-analyze-secrets " +
		"ClusterRoleBinding/nodeagent-analyze Deployment/nodeagent-analyze PodMonitor/nodeagent-analyze ServiceAccount/nodeagent-analyze"; strings.Join(kinds, " ") != want {
		t.Errorf("analyze alone renders %s, want %s", strings.Join(kinds, " "), want)
	}
	agents := lookup(objects["DaemonSet/nodeagent"], "spec", "selector", "matchLabels").(map[string]interface{})
	pod := lookup(deployment, "spec", "template", "metadata", "labels").(map[string]interface{})
	selected := true
	for k, v := range agents {
		selected = selected && pod[k] == v
	}
	if selected {
		t.Errorf("the DaemonSet's selector %v selects the analyzer's pod %v", agents, pod)
	}
}

// TestChartRefusesBadValues: each mistake fails the install with a message
// that names what is wrong, rather than deploying agents that cannot run.
func TestChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"mode=aftr", "image.tag=v1"}, "mode"},
		{[]string{"mdoe=after", "image.tag=v1"}, "mdoe"},
		{[]string{"image.tga=v1"}, "tga"},
		{[]string{"syncFrequency=1 minute", "image.tag=v1"}, "syncFrequency"},
		{[]string{"httpAddress=localhost", "image.tag=v1"}, "httpAddress"},
		{[]string{"image.pullPolicy=Sometimes", "image.tag=v1"}, "pullPolicy"},
		{[]string{"rootDir=var/lib/nodeagent", "image.tag=v1"}, "rootDir"},
		{[]string{"podMonitor.enable=true", "image.tag=v1"}, "enable"},
		{[]string{"mode=csi", "syncFrequency=30s", "image.tag=v1"}, "no pod syncs"},
		{[]string{"csi.checkAcess=true", "image.tag=v1"}, "checkAcess"},
		{[]string{"mode=csi", "csi.readAs=driver", "csi.secrets.enabled=true", "image.tag=v1"}, "needs csi.readAs=pod"},
		{[]string{"kubeletRootDir=var/lib/kubelet", "image.tag=v1"}, "kubeletRootDir"},
		{[]string{"analyze.enable=true", "image.tag=v1"}, "enable"},
		{[]string{"agents.enabled=false", "image.tag=v1"}, "nothing to install"},
		{[]string{"imagePullSecrets[0].nmae=regcred", "image.tag=v1"}, "nmae"},
		{[]string{"analyze.enabled=true", "analyze.httpAddress=localhost", "image.tag=v1"}, "httpAddress"},
		{[]string{"webhook.enabled=true", "image.tag=v1"}, "set mode=csi"},
		{[]string{"mode=csi", "webhook.enabled=true", "webhook.certManagerIssuer.kind=Issuers", "image.tag=v1"}, "kind"},
		// A source checkout's chart names no published image.
		{nil, "image.tag is empty"},
	} {
		args := []string{"template", "nodeagent", "deploy/helm/nodeagent"}
		for _, kv := range tc.set {
			args = append(args, "--set", kv)
		}
		cmd := exec.Command(tool(t, "HELM_BIN", "helm"), args...)
		cmd.Dir = repoRoot()
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("--set %s: err %v, output %s; want a failure that names %q", strings.Join(tc.set, " --set "), err, out, tc.want)
		}
	}
}

// TestChartRefusesUnknownMode: a mistyped mode fails the install with the
// modes it could be, instead of deploying agents in some default.
func TestChartRefusesUnknownMode(t *testing.T) {
	cmd := exec.Command(tool(t, "HELM_BIN", "helm"), "template", "nodeagent", "deploy/helm/nodeagent", "--set", "mode=afterr", "--set", "image.tag=v1")
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "before") || !strings.Contains(string(out), "watch") {
		t.Errorf("mode=afterr: err %v, output %s; want a failure that names the modes", err, out)
	}
}

// TestChartUninstallCheck: in the csi mode the chart's uninstall runs
// `nodeagent uninstall-check` first, as a pre-delete hook whose objects
// Helm removes once it passes; csi.uninstallCheck=false and the other modes
// (whose agents serve no pod) render none.
func TestChartUninstallCheck(t *testing.T) {
	hooks := func(args ...string) map[string]object {
		out := map[string]object{}
		for _, o := range helmTemplate(t, args...) {
			if hook := lookup(o, "metadata", "annotations", "helm.sh/hook"); hook != nil {
				if hook != "pre-delete" {
					t.Errorf("%s: hook %v, want pre-delete", key(o), hook)
				}
				if policy := lookup(o, "metadata", "annotations", "helm.sh/hook-delete-policy"); policy != "before-hook-creation,hook-succeeded" {
					t.Errorf("%s: delete policy %v: a passed check would leave it behind", key(o), policy)
				}
				out[key(o)] = o
			}
		}
		return out
	}
	got := hooks("--set", "mode=csi")
	job := got["Job/nodeagent-uninstall-check"]
	if job == nil || len(got) != 4 {
		t.Fatalf("the csi mode's hooks: %v, want the Job and its ServiceAccount, ClusterRole and binding", slices.Collect(maps.Keys(got)))
	}
	container := lookup(job, "spec", "template", "spec", "containers").([]interface{})[0].(map[string]interface{})
	if args := fmt.Sprint(container["args"]); args != "[uninstall-check --driver-name=configmaps.nodeagent.io]" {
		t.Errorf("the Job runs %s", args)
	}
	if rules := fmt.Sprint(lookup(got["ClusterRole/nodeagent-uninstall-check"], "rules")); rules != "[map[apiGroups:[] resources:[pods] verbs:[list]]]" {
		t.Errorf("the check's role: %s, want list on pods alone", rules)
	}
	for _, args := range [][]string{{"--set", "mode=csi", "--set", "csi.uninstallCheck=false"}, {"--set", "mode=after"}} {
		if got := hooks(args...); len(got) > 0 {
			t.Errorf("%v renders hooks %v", args, slices.Collect(maps.Keys(got)))
		}
	}
}
