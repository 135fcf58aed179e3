package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/ttl"
)

func fakeCluster() *fake.Clientset {
	immutable := true
	pod := func(name, node string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: corev1.PodSpec{NodeName: node,
				Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "v"}}}},
				Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
					ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "frozen"}}}}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	return fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node", Annotations: map[string]string{ttl.Annotation: "0"}},
			Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.28.15"}}},
		pod("running", "node", corev1.PodRunning),
		pod("done", "node", corev1.PodSucceeded),
		pod("unscheduled", "", corev1.PodPending),
		terminating(pod("terminating", "node", corev1.PodRunning)),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "frozen"}, Immutable: &immutable, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"password": []byte("hunter2")}},
	)
}

func terminating(p *corev1.Pod) *corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{}
	return p
}

// List keeps the running, scheduled pods that are not terminating, and what analyze needs of each
// object, and takes a refused Secret list as "unknown", not as a failure.
func TestList(t *testing.T) {
	client := fakeCluster()
	inv, err := List(context.Background(), client, "", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Nodes) != 1 || inv.Nodes[0].TTL != 0 || inv.Nodes[0].TTLMissing != "" || len(inv.Pods) != 1 || inv.Pods[0].Name != "running" {
		t.Errorf("nodes %+v, pods %+v; want the node with its TTL and only the running pod", inv.Nodes, inv.Pods)
	}
	if exists, immutable, known := inv.Exists(model.ConfigMap, "ns", "frozen"); !exists || !immutable || !known {
		t.Errorf("ConfigMap frozen: exists %v, immutable %v, known %v", exists, immutable, known)
	}
	if exists, _, _ := inv.Exists(model.Secret, "ns", "other"); exists || !inv.SecretsListed {
		t.Errorf("an unlisted Secret exists (%v), or Secrets were not listed (%v)", exists, inv.SecretsListed)
	}

	client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", nil)
	})
	inv, err = List(context.Background(), client, "", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exists, immutable, known := inv.Exists(model.Secret, "ns", "anything"); inv.SecretsListed || !exists || immutable || known {
		t.Errorf("Secrets forbidden: listed %v; Secret taken as exists %v, immutable %v, known %v; want not listed, exists, mutable, unknown", inv.SecretsListed, exists, immutable, known)
	}

	// A forbidden list analyze cannot do without fails the run, saying
	// which role to bind.
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
	})
	if _, err := List(context.Background(), client, "", 500, nil); err == nil || !strings.Contains(err.Error(), "listing pods") ||
		!strings.Contains(err.Error(), "nodeagent-analyze ClusterRole") {
		t.Errorf("pods forbidden: %v; want an error that names the list and the role to bind", err)
	}
}

// Run reads the fake cluster end to end; the JSON has the keys tools read
// and never a Secret's data; text and Markdown show every section.
func TestRunAndRender(t *testing.T) {
	o := DefaultOptions()
	o.ReadConfigz = false
	o.Assume.Strategy = model.StrategyCache
	r, err := Run(context.Background(), fakeCluster(), o)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Nodes[0]; n.Behaviour != model.EverySync || n.SettingsSource != Assumed || n.Pods != 1 {
		t.Errorf("node %+v; want every-sync, assumed, one pod", n)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"nodes":[{"name":"node","kubeletVersion":"v1.28.15","strategy":"Cache","syncFrequencySeconds":60,"ttlSeconds":0,"settingsSource":"assumed"`,
		`"total":{"predicted":{"configmaps":{"apiserverGetsPerSecond":`, `"quorumGetsPerSecond":`, `"etcdReadsPerSecond":`, `"watches":`,
		`"whatIfs":[{"name":"upgrade-to-v1.29"`, `"secrets":{`,
		`"updateDelaySeconds":{"median":`, `"findings":[]`, `"summary":{"findings":{"envNeverUpdated":0,`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("report.json lacks %s:\n%s", key, data)
		}
	}
	if strings.Contains(string(data), "hunter2") {
		t.Error("report.json holds a Secret's data")
	}
	var text bytes.Buffer
	if err := r.WriteText(&text, 10); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Predicted load", "What if", "upgrade-to-v1.29", "Busiest nodes (1 of 1)", "ConfigMap ns/frozen", "root CA", "assumed",
		"1 node, ", " in 1 namespace;", "reaches the volumes that mount it in", "Findings: configuration that does not reach containers"} {
		if !strings.Contains(text.String(), want) || !strings.Contains(r.Markdown(10)+text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
	dir := t.TempDir()
	if err := r.WriteDir(dir, 10); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.json", "report.md", "chart.svg", "chart.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
