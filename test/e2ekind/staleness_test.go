//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
)

// containerView reads what a running container really holds, from its
// node: crictl gives the container's pid, and /proc/PID/root and
// /proc/PID/environ are its file system and environment (the pause image
// has no shell to exec into).
type containerView struct {
	node, pid string
}

func viewContainer(t *testing.T, pod *corev1.Pod) containerView {
	t.Helper()
	if len(pod.Status.ContainerStatuses) == 0 {
		t.Fatalf("pod %s has no container yet", pod.Name)
	}
	return viewContainerNamed(t, pod, pod.Status.ContainerStatuses[0].Name)
}

// viewContainerNamed views pod's container name.
func viewContainerNamed(t *testing.T, pod *corev1.Pod, name string) containerView {
	t.Helper()
	i := slices.IndexFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == name })
	if i < 0 || pod.Status.ContainerStatuses[i].ContainerID == "" {
		t.Fatalf("pod %s has no container %s yet", pod.Name, name)
	}
	_, id, _ := strings.Cut(pod.Status.ContainerStatuses[i].ContainerID, "://")
	out, err := nodeExec(pod.Spec.NodeName, "sh", "-c", "crictl inspect "+id+" | jq -r .info.pid")
	if err != nil {
		t.Fatal(err)
	}
	return containerView{node: pod.Spec.NodeName, pid: strings.TrimSpace(string(out))}
}

func (c containerView) file(t *testing.T, path string) string {
	t.Helper()
	out, err := nodeExec(c.node, "cat", "/proc/"+c.pid+"/root"+path)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func (c containerView) env(t *testing.T, name string) string {
	t.Helper()
	out, err := nodeExec(c.node, "cat", "/proc/"+c.pid+"/environ")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(out), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	t.Fatalf("container on %s has no %s in its environment", c.node, name)
	return ""
}

// TestAnalyzeFindsWhatContainersHold seeds, on the kind cluster's real
// kubelets (Watch, their default), each case where a container holds other
// content than the API's: a ConfigMap read through subPath and into the
// environment, then updated; an immutable ConfigMap used by a pod on one
// node, deleted and recreated with new content, then used by a new pod on
// that node and one on another; a missing required object; a missing key.
// It reads what each container really sees, and requires analyze's
// staleSinceStart and immutableRecreated findings to be exactly the
// containers whose content differs from the API's, none missed and none
// extra, and its missing and missingKey findings to be the pods that
// cannot start. analyze always on, installed by the chart alone, must
// serve the same findings as series within 30 s and post an event on each
// finding's pod, a real Prometheus must fire deploy/prometheus's alerts
// for them, and the series of a pod restarted with the new content must
// go.
func TestAnalyzeFindsWhatContainersHold(t *testing.T) {
	t.Parallel() // touches no kubelet: runs beside TestCSIDriver, TestRealPodVolumes and TestHelmInstallAndUpgrade, after the tests that restart kubelets
	ctx := context.Background()
	nodes := clusterNodes(t)
	if len(nodes) < 2 {
		t.Fatalf("%d nodes, want two or more", len(nodes))
	}
	analyzer := installAnalyzer(t)
	onA, onB := nodes[0], nodes[1]
	ns := testNamespace(t, "e2e-kind-stale")
	t.Cleanup(func() { deletePods(t, ns) })
	configMaps := clientset.CoreV1().ConfigMaps(ns)
	pods := clientset.CoreV1().Pods(ns)
	createConfigMap := func(name string, immutable bool, data map[string]string) {
		t.Helper()
		if _, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data, Immutable: &immutable}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	source := func(name string, items ...string) corev1.VolumeSource {
		s := corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
		for _, key := range items {
			s.ConfigMap.Items = append(s.ConfigMap.Items, corev1.KeyToPath{Key: key, Path: key})
		}
		return s
	}
	createPod := func(name, node string, c corev1.Container, volumes ...corev1.Volume) {
		t.Helper()
		c.Name, c.Image = "app", podImage
		_, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{c}, Volumes: volumes}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	running := func(names ...string) map[string]*corev1.Pod {
		t.Helper()
		got := map[string]*corev1.Pod{}
		eventually(t, 3*time.Minute, "pods running: "+strings.Join(names, ", "), func() string {
			for _, name := range names {
				p, err := pods.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err.Error()
				}
				if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Running == nil {
					return fmt.Sprintf("%s is %s", p.Name, p.Status.Phase)
				}
				got[name] = p
			}
			return ""
		})
		return got
	}

	// (1) The consumers, as the objects are now.
	createConfigMap("live", false, map[string]string{"greeting": "v1"})
	createConfigMap("frozen", true, map[string]string{"greeting": "v1"})
	createConfigMap("keys", false, map[string]string{"a": "1"})
	createConsumer := func() {
		t.Helper()
		createPod("consumer", onA, corev1.Container{
			Env: []corev1.EnvVar{{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "live"}, Key: "greeting"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "live", MountPath: "/etc/sub/greeting", SubPath: "greeting"}},
		}, corev1.Volume{Name: "live", VolumeSource: source("live")})
	}
	createConsumer()
	frozenMount := corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "frozen", MountPath: "/etc/frozen"}}}
	frozenVolume := corev1.Volume{Name: "frozen", VolumeSource: source("frozen")}
	createPod("frozen-old", onA, frozenMount, frozenVolume)
	createPod("missing", onB, corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "absent", MountPath: "/etc/absent"}}},
		corev1.Volume{Name: "absent", VolumeSource: source("absent")})
	createPod("missing-key", onB, corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "keys", MountPath: "/etc/keys"}}},
		corev1.Volume{Name: "keys", VolumeSource: source("keys", "a", "b")})
	running("consumer", "frozen-old")

	// (2) Change them: an update, and an immutable object recreated with
	// new content; then new users of it on the same node and another. The
	// API records times in whole seconds: each change comes a second after
	// the starts it must follow.
	time.Sleep(1100 * time.Millisecond)
	live, err := configMaps.Get(ctx, "live", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.Data["greeting"] = "v2"
	if _, err := configMaps.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := configMaps.Delete(ctx, "frozen", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	createConfigMap("frozen", true, map[string]string{"greeting": "v2"})
	createPod("frozen-new-same-node", onA, frozenMount, frozenVolume)
	createPod("frozen-new-other-node", onB, frozenMount, frozenVolume)
	seen := running("consumer", "frozen-old", "frozen-new-same-node", "frozen-new-other-node")

	// (3) What each container really holds, against the API's "v2".
	stale := map[string]bool{} // "pod object"
	consumer := viewContainer(t, seen["consumer"])
	if v := consumer.env(t, "GREETING"); v != "v2" {
		stale["consumer live"] = true
		t.Logf("consumer: GREETING=%q in its environment, the API has v2", v)
	}
	if v := consumer.file(t, "/etc/sub/greeting"); v != "v2" {
		stale["consumer live"] = true
		t.Logf("consumer: %q in its subPath mount, the API has v2", v)
	}
	for _, name := range []string{"frozen-old", "frozen-new-same-node", "frozen-new-other-node"} {
		if v := viewContainer(t, seen[name]).file(t, "/etc/frozen/greeting"); v != "v2" {
			stale[name+" frozen"] = true
			t.Logf("%s on %s: %q in /etc/frozen/greeting, the API has v2", name, seen[name].Spec.NodeName, v)
		}
	}
	if len(stale) == 0 {
		t.Fatal("no container holds old content: the kubelets did not behave as the test expects")
	}

	// (4) analyze's findings in this namespace.
	r := runAnalyze(t, "analyze-stale")
	got := map[analyze.FindingType][]string{}
	for _, f := range r.Findings {
		if f.Object.Namespace == ns {
			pod := strings.TrimPrefix(f.Pod, ns+"/")
			got[f.Type] = append(got[f.Type], pod+" "+f.Object.Name)
			t.Logf("%s: %s/%s on %s, %s: %s", f.Type, pod, f.Container, f.Node, f.Object, f.Detail)
		}
	}
	var reported []string
	for _, typ := range []analyze.FindingType{analyze.StaleSinceStart, analyze.ImmutableRecreated} {
		reported = append(reported, got[typ]...)
	}
	if want := keys(stale); strings.Join(dedupe(reported), ", ") != strings.Join(want, ", ") {
		t.Errorf("staleSinceStart and immutableRecreated name %q; the containers that hold old content are %q", dedupe(reported), want)
	}
	for typ, want := range map[analyze.FindingType]string{analyze.Missing: "missing absent", analyze.MissingKey: "missing-key keys"} {
		if strings.Join(got[typ], ", ") != want {
			t.Errorf("%s findings %q, want %q", typ, got[typ], want)
		}
	}
	for _, name := range []string{"missing", "missing-key"} {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.Phase == corev1.PodRunning {
			t.Errorf("pod %s is running, but analyze says it cannot start", name)
		}
	}

	// (5) Always on: the same findings as series, within 30 s.
	servedWithin := func(what string, want func(found map[string][]string) string) {
		t.Helper()
		start := time.Now()
		eventually(t, 30*time.Second, what, func() string {
			found, err := analyzerFindings(ctx, analyzer, ns)
			if err != nil {
				return err.Error()
			}
			return want(found)
		})
		t.Logf("%s: served after %.1fs", what, time.Since(start).Seconds())
	}
	servedWithin("the analyzer's series name the containers that hold old content", func(found map[string][]string) string {
		served := dedupe(append(slices.Clone(found[string(analyze.StaleSinceStart)]), found[string(analyze.ImmutableRecreated)]...))
		if got, want := strings.Join(served, ", "), strings.Join(keys(stale), ", "); got != want {
			return fmt.Sprintf("staleSinceStart and immutableRecreated series %q, want %q", got, want)
		}
		if got := strings.Join(found[string(analyze.Missing)], ", ") + "; " + strings.Join(found[string(analyze.MissingKey)], ", "); got != "missing absent; missing-key keys" {
			return fmt.Sprintf("missing and missingKey series %q", got)
		}
		return ""
	})

	// The findings came after the analyzer's first report: each has its
	// event on its pod.
	var wantEvents []string
	for _, f := range r.Findings {
		if f.Object.Namespace == ns {
			wantEvents = append(wantEvents, strings.TrimPrefix(f.Pod, ns+"/")+" "+strings.ToUpper(string(f.Type[:1]))+string(f.Type[1:]))
		}
	}
	eventually(t, 30*time.Second, "an event on each finding's pod", func() string {
		got, err := analyzerEvents(ctx, ns)
		if err != nil {
			return err.Error()
		}
		if got, want := strings.Join(got, ", "), strings.Join(dedupe(wantEvents), ", "); got != want {
			return fmt.Sprintf("events %q, want %q", got, want)
		}
		return ""
	})

	// (6) The alerts, on a real Prometheus that scrapes the analyzer.
	var wantAlerts []string
	for _, f := range r.Findings {
		pod := strings.TrimPrefix(f.Pod, ns+"/")
		if f.Object.Namespace != ns {
			continue
		}
		switch f.Type {
		case analyze.StaleSinceStart:
			wantAlerts = append(wantAlerts, "ContainerConfigurationStale "+pod+" "+f.Object.Name)
		case analyze.ImmutableRecreated:
			wantAlerts = append(wantAlerts, "ImmutableObjectServedStale "+pod+" "+f.Object.Name)
		case analyze.Missing, analyze.MissingKey:
			wantAlerts = append(wantAlerts, "ConfigurationObjectMissing "+pod+" "+f.Object.Name)
		}
	}
	prom := startPrometheus(t, analyzer)
	eventually(t, time.Minute, "deploy/prometheus's alerts firing for each finding", func() string {
		firing, err := firingAlerts(ctx, prom, ns)
		if err != nil {
			return err.Error()
		}
		if got, want := strings.Join(firing, ", "), strings.Join(dedupe(wantAlerts), ", "); got != want {
			return fmt.Sprintf("firing %q, want %q", got, want)
		}
		return ""
	})

	checkAnalyzeDashboard(t, prom)

	// (7) The consumer restarted (a new pod, as a rollout makes): it reads
	// the object as it is now, and its staleSinceStart series goes.
	if err := pods.Delete(ctx, "consumer", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the consumer pod gone", func() string {
		if _, err := pods.Get(ctx, "consumer", metav1.GetOptions{}); err == nil {
			return "still there"
		}
		return ""
	})
	createConsumer()
	running("consumer")
	servedWithin("the restarted consumer's staleSinceStart series gone", func(found map[string][]string) string {
		for _, f := range found[string(analyze.StaleSinceStart)] {
			if strings.HasPrefix(f, "consumer ") {
				return "still served: " + f
			}
		}
		// It still reads the object through subPath and its environment,
		// which never update: those findings stay.
		if !slices.Contains(found[string(analyze.SubPathNeverUpdated)], "consumer live") {
			return fmt.Sprintf("subPathNeverUpdated series %q, want the new consumer's", found[string(analyze.SubPathNeverUpdated)])
		}
		return ""
	})
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func dedupe(list []string) []string {
	out := slices.Clone(list)
	sort.Strings(out)
	return slices.Compact(out)
}
