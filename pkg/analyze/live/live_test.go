package live

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

func node(name string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.NodeInfo.KubeletVersion = "v1.37.2"
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"a-big-image-list"}}}
	return n
}

// podReading is a running pod on node whose container mounts configMap
// and reads env into its environment.
func podReading(name, node, configMap, env string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", VolumeMounts: []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: env}}}}}},
			Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func startAnalyzer(t *testing.T, client *fake.Clientset) *Analyzer {
	t.Helper()
	o := analyze.DefaultOptions()
	o.ReadConfigz = false
	return runAnalyzer(t, client, Options{Analyze: o, Quiet: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond})
}

// runAnalyzer runs an Analyzer of opts until the test ends, and waits for
// its first report.
func runAnalyzer(t *testing.T, client *fake.Clientset, opts Options) *Analyzer {
	t.Helper()
	a := New(client, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	testutil.WaitFor(t, "the first report", func() bool { return a.Report() != nil })
	return a
}

func findingTypes(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, string(f.Type)+" "+f.Object.Name)
	}
	slices.Sort(out)
	return out
}

// The report follows the cluster: a missing ConfigMap is a finding until
// it is created, within the debounce, with no list after the first; the
// endpoints serve it; the informers hold no object's data.
func TestAnalyzerFollowsTheCluster(t *testing.T) {
	client := fake.NewClientset(node("n1"), podReading("web", "n1", "cfg", "env"),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cfg"}, Data: map[string]string{"k": "a secret-ish value"}})
	a := startAnalyzer(t, client)
	first := a.Report()
	if got := findingTypes(first); !slices.Contains(got, "missing env") {
		t.Fatalf("findings %v, want the missing ConfigMap env", got)
	}
	if _, err := client.CoreV1().ConfigMaps("shop").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "env"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "a report without the missing ConfigMap", func() bool {
		return !slices.Contains(findingTypes(a.Report()), "missing env")
	})
	if r := a.Report(); !r.ComputedAt.After(first.ComputedAt) || r.Objects["configmaps"] != 2 || r.Objects["pods"] != 1 {
		t.Errorf("report at %v after %v, objects %v", r.ComputedAt, first.ComputedAt, r.Objects)
	}
	lists := 0
	for _, action := range client.Actions() {
		if action.GetVerb() == "list" && action.GetResource().Resource == "configmaps" {
			lists++
		}
	}
	if lists != 1 {
		t.Errorf("%d lists of ConfigMaps; want the informer's one", lists)
	}

	for _, obj := range a.watcher.configMaps.GetStore().List() {
		if e, ok := obj.(*objectEntry); !ok || e.Info == nil || e.name == "cfg" && !slices.Equal(e.Info.Keys, []string{"k"}) {
			t.Errorf("the informer holds %T %+v: want the ConfigMap's inventory entry alone", obj, obj)
		}
	}
	for _, obj := range a.watcher.pods.GetStore().List() {
		if e, ok := obj.(*podEntry); !ok || !e.Served || e.nodeName() != "n1" || len(e.info().Refs.Volumes) != 1 {
			t.Errorf("the informer holds %T %+v: want the pod's inventory entry alone", obj, obj)
		}
	}
	for _, obj := range a.watcher.nodes.GetStore().List() {
		if e, ok := obj.(*nodeEntry); !ok || e.Info.Name != e.name {
			t.Errorf("the informer holds %T %+v: want the node's inventory entry alone", obj, obj)
		}
	}

	registry := prometheus.NewRegistry()
	registry.MustRegister(a.Collector())
	server := httptest.NewServer(a.Handler(registry))
	defer server.Close()
	for path, want := range map[string]string{
		"/report":  `"computedAt"`,
		"/readyz":  "ok",
		"/metrics": `nodeagent_analyze_findings{namespace="shop",type="envNeverUpdated"} 1`,
	} {
		resp, err := server.Client().Get(server.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), want) {
			t.Errorf("%s: %.300s, want %s", path, body, want)
		}
	}
	// /metrics, gzipped (two members: the registry's, the report's) or
	// not, is one exposition with both.
	for _, encoding := range []string{"gzip", "identity"} {
		req, _ := http.NewRequest(http.MethodGet, server.URL+"/metrics", nil)
		req.Header.Set("Accept-Encoding", encoding)
		resp, err := server.Client().Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		var body io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			if body, err = gzip.NewReader(resp.Body); err != nil {
				t.Fatal(err)
			}
		} else if encoding == "gzip" {
			t.Error("/metrics not gzipped for a scraper that accepts it")
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(body)
		resp.Body.Close()
		if err != nil || families["nodeagent_analyze_computations_total"] == nil || families["nodeagent_analyze_findings"] == nil {
			t.Errorf("/metrics (%s): %d families, err %v; want the registry's and the report's", encoding, len(families), err)
		}
	}
}

// A user who may not list Secrets gets a report that says so, and no
// Secret informer.
func TestAnalyzerWithoutSecrets(t *testing.T) {
	client := fake.NewClientset(node("n1"))
	client.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("secrets"), "", nil)
	})
	a := startAnalyzer(t, client)
	if a.watcher.secrets != nil || !slices.Contains(a.Report().Warnings, secretsUnlisted) {
		t.Errorf("warnings %v, want that Secrets are not listed", a.Report().Warnings)
	}
}

// The kubelets' settings are read once, then for a node whose Node changed,
// and for every node once the interval is due; never per computation.
func TestSettingsAreReadOnlyWhenDue(t *testing.T) {
	client := fake.NewClientset()
	o := analyze.DefaultOptions() // reads /configz: each read asks a SelfSubjectAccessReview first
	a := New(client, Options{Analyze: o})
	inv := &inventory.Inventory{Nodes: []inventory.NodeInfo{{Name: "n1", KubeletVersion: "v1.37.2"}, {Name: "n2", KubeletVersion: "v1.37.2"}}}
	reads := func() int {
		n := 0
		for _, action := range client.Actions() {
			if action.GetVerb() == "create" && action.GetResource().Resource == "selfsubjectaccessreviews" {
				n++
			}
		}
		return n
	}
	ctx := context.Background()
	for i, step := range []struct {
		do   func()
		want int
	}{
		{func() {}, 1},                               // the first computation reads every node
		{func() {}, 1},                               // the next reads none
		{func() { a.changed("n1") }, 2},              // a Node changed: that node again
		{func() { a.changed("") }, 2},                // a pod changed: no node
		{func() { a.settingsRead = time.Time{} }, 3}, // the interval came: every node
	} {
		step.do()
		settings, _ := a.settingsNow(ctx, inv)
		if got := reads(); got != step.want || len(settings) != 2 {
			t.Errorf("step %d: %d reads of the settings in all, %d nodes' settings; want %d and 2", i, got, len(settings), step.want)
		}
	}
}

// Updates that change nothing the analysis reads (a pod's annotation, a
// Node's status) compute nothing; one that does (a Node's TTL) computes
// again.
func TestIrrelevantUpdatesComputeNothing(t *testing.T) {
	client := fake.NewClientset(node("n1"), podReading("web", "n1", "cfg", "env"))
	a := startAnalyzer(t, client)
	ctx := context.Background()
	settled := func() int64 {
		// Past the debounce's longest wait, the count no longer moves.
		time.Sleep(300 * time.Millisecond)
		return a.computations.Load()
	}
	before := settled()
	pod, err := client.CoreV1().Pods("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Annotations = map[string]string{"deployed-by": "ci"}
	if _, err := client.CoreV1().Pods("shop").Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if after := settled(); after != before {
		t.Errorf("a pod's annotation and a Node's status computed %d times; want none", after-before)
	}
	n.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "30"}
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "a computation after the TTL's change", func() bool { return a.computations.Load() > before })
}

// The first report computes every node's part, once, however late the
// informers' handlers hear of the listed objects; a pod's change then
// computes its node's alone.
func TestChangesComputeTheirNodesAlone(t *testing.T) {
	var objects []runtime.Object
	for n := range 50 {
		objects = append(objects, node(fmt.Sprint("n", n)))
		for p := range 4 {
			objects = append(objects, podReading(fmt.Sprintf("web-%d-%d", n, p), fmt.Sprint("n", n), "cfg", "env"))
		}
	}
	client := fake.NewClientset(objects...)
	a := startAnalyzer(t, client)
	settled := func() int64 {
		time.Sleep(300 * time.Millisecond) // past the debounce's longest wait
		return a.partsComputed.Load()
	}
	if got := settled(); got != 50 {
		t.Fatalf("%d nodes' parts computed for the first report and after; want the 50 nodes' once", got)
	}
	ctx := context.Background()
	pod, err := client.CoreV1().Pods("shop").Get(ctx, "web-7-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}
	if _, err := client.CoreV1().Pods("shop").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the pod's node computed again", func() bool { return a.partsComputed.Load() > 50 })
	if got := settled(); got != 51 {
		t.Errorf("%d parts computed after one pod's change; want 51", got)
	}
}

// A namespace that opts in to the admission webhook while analyze runs
// turns its pods' kubelet-served configMap volumes into notConverted.
func TestAnalyzerFollowsTheOptIn(t *testing.T) {
	client := fake.NewClientset(node("n1"), podReading("web", "n1", "cfg", "env"),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	a := startAnalyzer(t, client)
	if got := findingTypes(a.Report()); slices.Contains(got, "notConverted cfg") {
		t.Fatalf("findings %v before the namespace opted in", got)
	}
	label := `{"metadata":{"labels":{"configmaps.nodeagent.io/serve":"enabled"}}}`
	if _, err := client.CoreV1().Namespaces().Patch(context.Background(), "shop", "application/merge-patch+json", []byte(label), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "a report with notConverted", func() bool {
		return slices.Contains(findingTypes(a.Report()), "notConverted cfg")
	})
}
