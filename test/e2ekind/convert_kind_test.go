//go:build e2e

package e2ekind

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// csiConvertedChart renders the same chart with helm template, pipes it
// through nodeagent convert as docs/csi.md shows, and creates what comes
// out in a namespace that has not opted in to the webhook: the
// Deployment's pod runs on the driver's volumes, which the driver reads as
// the pod through the Role and RoleBinding convert wrote (its pod would
// wait with PermissionDenied without them), and an update reaches its
// subPath file.
func csiConvertedChart(t *testing.T) {
	ns := testNamespace(t, "e2e-kind-convert")
	rendered := helm(t, "template", webappRelease, webappChart, "--namespace", ns, "--set", "image="+podImage,
		"--set-string", "configFile="+e2eutil.DelayValueKey+",config."+e2eutil.DelayValueKey+"=0,site."+e2eutil.DelayValueKey+"=0")
	cmd := exec.Command(e2eutil.NodeagentBinary(t), "convert", "--namespace", ns, "-")
	cmd.Stdin, cmd.Stderr = strings.NewReader(rendered), os.Stderr
	converted, err := cmd.Output()
	if err != nil {
		t.Fatalf("nodeagent convert: %v", err)
	}
	grants := 0
	for _, obj := range decodeAll(t, converted) {
		if _, ok := obj.(*rbacv1.RoleBinding); ok {
			grants++
		}
		mustCreate(t, ns, obj)
	}
	if grants != 1 {
		t.Errorf("nodeagent convert wrote %d RoleBindings, want one, for the Deployment", grants)
	}
	var pod *corev1.Pod
	eventually(t, 2*time.Minute, "the converted Deployment's pod running", func() string {
		pods, err := clientset.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 || !allRunning(&pods.Items[0]) {
			return "not yet"
		}
		pod = &pods.Items[0]
		return ""
	})
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil {
			t.Errorf("volume %s is still a configMap volume after nodeagent convert", v.Name)
		}
	}
	cm, err := clientset.CoreV1().ConfigMaps(ns).Get(context.Background(), webappRelease+"-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[e2eutil.DelayValueKey] = "1"
	if _, err := clientset.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	root := viewContainerNamed(t, pod, "server").rootFromHost(t)
	eventually(t, 10*time.Second, "the update in the server's subPath file", func() string {
		if got, err := readHostFile(root + "/etc/webapp/" + e2eutil.DelayValueKey); err != nil || got != "1" {
			return "holds " + got
		}
		return ""
	})
}

// decodeAll decodes every document of a multi-document YAML stream.
func decodeAll(t *testing.T, data []byte) []runtime.Object {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []runtime.Object
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("decoding %s: %v", doc, err)
		}
		out = append(out, obj)
	}
}
