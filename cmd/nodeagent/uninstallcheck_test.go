package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// servePods is an apiserver that answers the list of every namespace's
// pods with pods, and a kubeconfig that points at it.
func servePods(t *testing.T, pods ...corev1.Pod) string {
	t.Helper()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/pods" {
			http.NotFound(w, r)
			return
		}
		list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: pods}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(server.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	config := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q}}]\n"+
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {}}]\n", server.URL)
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

func TestUninstallCheck(t *testing.T) {
	driverPod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-1"},
		Spec: corev1.PodSpec{NodeName: "node-1", Volumes: []corev1.Volume{{Name: "config",
			VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "configmaps.nodeagent.io"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	kubeletPod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-1"}}
	for _, tt := range []struct {
		name       string
		pods       []corev1.Pod
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"no pod uses the driver", []corev1.Pod{kubeletPod}, 0, "No pod uses the CSI driver configmaps.nodeagent.io", ""},
		{"a pod uses it", []corev1.Pod{kubeletPod, driverPod}, 1, "", "1 pod uses the CSI driver configmaps.nodeagent.io"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := dispatch([]string{"uninstall-check", "--kubeconfig=" + servePods(t, tt.pods...)}, &stdout, &stderr)
			if code != tt.wantCode || !strings.Contains(stdout.String(), tt.wantStdout) || !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
			if code != 0 && !strings.Contains(stderr.String(), "shop/web-1 on node node-1") {
				t.Errorf("the refusal does not name the pod:\n%s", stderr.String())
			}
		})
	}
}
