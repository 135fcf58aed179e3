//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
)

// repoRoot is the checkout holding this test.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..")
}

// pinnedTool is the path of a pinned tool that make builds: $env when make
// sets it, else _output/bin/<name>; a missing one fails the test with the
// make target that builds it (make e2e builds them all).
func pinnedTool(t *testing.T, env, name string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		bin = filepath.Join(repoRoot(t), "_output", "bin", name)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v; run `make %s` (or `make e2e`)", name, err, name)
	}
	return bin
}

// kustomizeBuild renders deploy/<dir> with the pinned kustomize CLI.
func kustomizeBuild(t *testing.T, dir string) []byte {
	t.Helper()
	bin := pinnedTool(t, "KUSTOMIZE_BIN", "kustomize")
	out, err := exec.Command(bin, "build", filepath.Join(repoRoot(t), "deploy", dir)).Output()
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return out
}

// applyManifests server-side-applies every document of a rendered
// manifest to c, as `kubectl apply --server-side` would, and returns them.
func applyManifests(t *testing.T, c *controlplane.ControlPlane, manifest []byte) []*unstructured.Unstructured {
	t.Helper()
	return applyManifestsWith(t, c, manifest, applyOptions{})
}

// applyOptions change how applyManifestsWith applies.
type applyOptions struct {
	// DryRun asks the apiserver to check every object, admission and
	// validation included, and store none.
	DryRun bool
	// Namespace, if set, replaces every namespaced object's namespace.
	Namespace string
}

// applyManifestsWith is applyManifests with opts; the items of a List are
// applied one by one.
func applyManifestsWith(t *testing.T, c *controlplane.ControlPlane, manifest []byte, opts applyOptions) []*unstructured.Unstructured {
	t.Helper()
	cfg := c.RESTConfig()
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kubernetes.NewForConfigOrDie(cfg).Discovery()))
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objects []*unstructured.Unstructured
	apply := func(obj *unstructured.Unstructured) {
		mapping, err := mapper.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
		if err != nil {
			t.Fatal(err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if opts.Namespace != "" {
				obj.SetNamespace(opts.Namespace)
			}
			ri = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		}
		patch := metav1.PatchOptions{FieldManager: "nodeagent-e2e", Force: new(true)}
		if opts.DryRun {
			patch.DryRun = []string{metav1.DryRunAll}
		}
		data, _ := obj.MarshalJSON()
		if _, err := ri.Patch(context.Background(), obj.GetName(), types.ApplyPatchType, data, patch); err != nil {
			t.Fatalf("applying %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		objects = append(objects, obj)
	}
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		switch {
		case len(obj.Object) == 0:
		case obj.IsList():
			_ = obj.EachListItem(func(item runtime.Object) error { apply(item.(*unstructured.Unstructured)); return nil })
		default:
			apply(obj)
		}
	}
	return objects
}

func daemonSetOf(t *testing.T, objects []*unstructured.Unstructured) *appsv1.DaemonSet {
	t.Helper()
	for _, obj := range objects {
		if obj.GetKind() == "DaemonSet" {
			ds := &appsv1.DaemonSet{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, ds); err != nil {
				t.Fatal(err)
			}
			return ds
		}
	}
	t.Fatal("no DaemonSet in the manifest")
	return nil
}

// serviceAccountClient mints a token for nodeagent/nodeagent on c with the
// TokenRequest API, as the kubelet does for the DaemonSet's pods, and
// returns a kubeconfig and client that use only that token.
func serviceAccountClient(t *testing.T, c *controlplane.ControlPlane) (string, kubernetes.Interface) {
	t.Helper()
	path, cfg := tokenKubeconfig(t, c, "nodeagent", "nodeagent")
	return path, kubernetes.NewForConfigOrDie(cfg)
}

// tokenKubeconfig is a kubeconfig, and its client config, that speaks to
// c as ServiceAccount namespace/name, with a token minted for it.
func tokenKubeconfig(t *testing.T, c *controlplane.ControlPlane, namespace, name string) (string, *rest.Config) {
	t.Helper()
	tr, err := kubernetes.NewForConfigOrDie(c.RESTConfig()).CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin := c.RESTConfig()
	cfg := &rest.Config{Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAFile: admin.CAFile}}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthority: cfg.CAFile}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: name}
	kc.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path, cfg
}

// Each overlay, applied for real: the agent runs with the DaemonSet
// container's exact arguments (only the paths a test cannot use are
// changed) and the ServiceAccount's own token, and does its job; and that
// identity can do nothing its role does not grant.
func TestDeployOverlays(t *testing.T) {
	for _, overlay := range []string{"before", "after", "watch", "kind"} {
		t.Run(overlay, func(t *testing.T) {
			objects := applyManifests(t, cp, kustomizeBuild(t, "overlays/"+overlay))
			ds := daemonSetOf(t, objects)
			container := ds.Spec.Template.Spec.Containers[0]
			checkHardening(t, ds)

			kubeconfig, saClient := serviceAccountClient(t, cp)
			node := "node-deploy-" + overlay
			createNode(t, node, 0)
			ns := createNamespace(t, "deploy")
			createConfigMap(t, ns, "cfg", map[string]string{"k": overlay})
			pod := createPod(t, ns, "app", node, volume{name: "cfg", configMap: "cfg"})

			// The container's args, with the root dir and the listen address
			// moved somewhere a test may use, and NODE_NAME as the downward
			// API would set it.
			var args []string
			for _, arg := range container.Args[1:] { // [0] is "run"
				if !strings.HasPrefix(arg, "--root-dir=") && !strings.HasPrefix(arg, "--http-address=") {
					args = append(args, arg)
				}
			}
			a := startAgentWith(t, node, kubeconfig, append(args, "--sync-frequency=2s")...)
			a.waitForFile(a.volumePath(pod, "cfg", "k"), overlay, 30*time.Second)

			checkForbidden(t, saClient, overlay)
		})
	}
}

func checkHardening(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	c := ds.Spec.Template.Spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
		fmt.Sprint(sc.Capabilities.Add) != "[CHOWN FSETID]" {
		t.Errorf("container security context is not hardened: %+v", sc)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("probes must use /healthz and /readyz")
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Error("memory request and limit must be set")
	}
	if len(ds.Spec.Template.Spec.Tolerations) != 1 || ds.Spec.Template.Spec.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Error("the DaemonSet must tolerate every taint")
	}
	if env := c.Env; len(env) == 0 || env[0].Name != "NODE_NAME" || env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Error("NODE_NAME must come from spec.nodeName")
	}
}

// checkForbidden tries, with the agent's identity, what its role does not
// grant; every attempt must be refused by the authorizer.
func checkForbidden(t *testing.T, c kubernetes.Interface, overlay string) {
	t.Helper()
	ctx := context.Background()
	attempts := map[string]error{}
	_, attempts["get secrets"] = c.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	_, attempts["create configmaps"] = c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	attempts["delete configmaps"] = c.CoreV1().ConfigMaps("default").Delete(ctx, "kube-root-ca.crt", metav1.DeleteOptions{})
	_, attempts["create pods"] = c.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}}}, metav1.CreateOptions{})
	attempts["delete pods"] = c.CoreV1().Pods("default").Delete(ctx, "x", metav1.DeleteOptions{})
	_, attempts["patch nodes"] = c.CoreV1().Nodes().Patch(ctx, "node-deploy-"+overlay, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	attempts["delete nodes"] = c.CoreV1().Nodes().Delete(ctx, "node-deploy-"+overlay, metav1.DeleteOptions{})
	_, attempts["create serviceaccount tokens"] = c.CoreV1().ServiceAccounts("nodeagent").CreateToken(ctx, "nodeagent", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	_, attempts["update daemonsets"] = c.AppsV1().DaemonSets("nodeagent").Patch(ctx, "nodeagent", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
	if overlay != "watch" {
		_, attempts["list configmaps"] = c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	}
	for what, err := range attempts {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: got %v, want Forbidden", what, err)
		}
	}
	// And what it is granted works.
	if _, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Errorf("list pods: %v", err)
	}
	if overlay == "watch" {
		if _, err := c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
			t.Errorf("watch overlay: list configmaps: %v", err)
		}
	}
}
