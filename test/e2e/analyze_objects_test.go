//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
	"github.com/nodeagent-io/nodeagent/internal/testutil"
	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// createAnalyzeObjects makes the ConfigMaps and Secrets analyzePods read:
// each node's own, the shared ones, the environment's and one immutable
// ConfigMap. "absent" is left missing on purpose.
func createAnalyzeObjects(t *testing.T, ns string, fleet []analyzeNode) {
	t.Helper()
	ctx := context.Background()
	immutable := true
	configMaps := []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"shared.conf": "a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "shared-2"}, Data: map[string]string{"more.conf": "b"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "env-only"}, Data: map[string]string{"MODE": "e2e"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Data: map[string]string{"frozen.conf": "c"}, Immutable: &immutable},
	}
	secrets := []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "shared-secret"}, Data: map[string][]byte{"token": []byte("s")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "env-secret"}, Data: map[string][]byte{"password": []byte("p")}},
	}
	for _, n := range fleet {
		for _, name := range []string{"own-0-" + n.name, "own-1-" + n.name} {
			configMaps = append(configMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"own.conf": name}})
		}
		secrets = append(secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "own-secret-" + n.name}, Data: map[string][]byte{"key": []byte(n.name)}})
	}
	for _, c := range configMaps {
		if _, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range secrets {
		if _, err := clientset.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// analyzePods are one node's six pods, each also given the
// service-account volume by the admission plugin:
//   - own-0: its own ConfigMap, and envFrom a ConfigMap only the
//     environment reads;
//   - own-1: its own ConfigMap and its node's own Secret as volumes, and an
//     env var from a Secret only the environment reads;
//   - shared-a: the shared ConfigMap, and a projected volume of a second
//     shared ConfigMap and a shared Secret;
//   - shared-b: the shared ConfigMap;
//   - frozen: the immutable ConfigMap;
//   - absent: an optional ConfigMap that does not exist.
func analyzePods(ns, node string) []*corev1.Pod {
	optional := true
	configMap := func(name string) corev1.VolumeSource {
		return corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
	}
	pod := func(base string, volumes map[string]corev1.VolumeSource, change func(*corev1.Container)) *corev1.Pod {
		c := corev1.Container{Name: "app", Image: "registry.k8s.io/pause:3.10"}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: base + "-" + node}, Spec: corev1.PodSpec{NodeName: node}}
		for name, source := range volumes {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: source})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/etc/" + name})
		}
		if change != nil {
			change(&c)
		}
		p.Spec.Containers = []corev1.Container{c}
		return p
	}
	absent := configMap("absent")
	absent.ConfigMap.Optional = &optional
	return []*corev1.Pod{
		pod("own-0", map[string]corev1.VolumeSource{"own": configMap("own-0-" + node)}, func(c *corev1.Container) {
			c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "env-only"}}}}
		}),
		pod("own-1", map[string]corev1.VolumeSource{
			"own":    configMap("own-1-" + node),
			"secret": {Secret: &corev1.SecretVolumeSource{SecretName: "own-secret-" + node}},
		}, func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "password"}}}}
		}),
		pod("shared-a", map[string]corev1.VolumeSource{
			"shared": configMap("shared"),
			"projected": {Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "shared-2"}}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "shared-secret"}}},
			}}},
		}, nil),
		pod("shared-b", map[string]corev1.VolumeSource{"shared": configMap("shared")}, nil),
		pod("frozen", map[string]corev1.VolumeSource{"frozen": configMap("frozen")}, nil),
		pod("absent", map[string]corev1.VolumeSource{"absent": absent}, nil),
	}
}

// analyzeAsLeastPrivileged runs analyze as a user bound to the
// nodeagent-analyze ClusterRole of deploy/analyze alone, and returns its
// result: it must work without Secrets or nodes/proxy, and say so.
func analyzeAsLeastPrivileged(t *testing.T, nodeSelector string) analyze.Result {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "analyze", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var role rbacv1.ClusterRole
		if err := decoder.Decode(&role); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if _, err := clientset.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = clientset.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}) })
	}
	const user = "analyze-e2e-reader"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "nodeagent-analyze"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = clientset.RbacV1().ClusterRoleBindings().Delete(ctx, user, metav1.DeleteOptions{}) })
	cfg, err := cp.UserRESTConfig(user, "analysts")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "reader.kubeconfig")
	if err := controlplane.WriteKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatal(err)
	}
	var r analyze.Result
	// RBAC takes a moment to see a new binding.
	testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
		out, err := exec.Command(e2eutil.NodeagentBinary(t), "analyze", "--kubeconfig="+kubeconfig, "--node-selector="+nodeSelector, "-o", "json").Output()
		if err != nil {
			return fmt.Errorf("nodeagent analyze as %s: %v\n%s", user, err, stderrOf(err))
		}
		return json.Unmarshal(out, &r)
	})
	return r
}
