//go:build e2e

package e2ekind

import (
	"context"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// agentClient authenticates as the deployed agents do: with a token of the
// nodeagent ServiceAccount that deploy/base binds to its ClusterRole.
func agentClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	token, err := clientset.CoreV1().ServiceAccounts("nodeagent").CreateToken(context.Background(), "nodeagent",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(adminConfig)
	cfg.BearerToken = token.Status.Token
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServiceAccountRefusals: with the agent's real ServiceAccount, what
// the agent needs works and everything else is refused by the cluster's
// RBAC, on a real cluster's authorizers.
func TestServiceAccountRefusals(t *testing.T) {
	ctx := context.Background()
	ns := testNamespace(t, "e2e-kind-rbac")
	if _, err := clientset.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	agent := agentClient(t)
	node := clusterNodes(t)[0]
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()

	allowed := map[string]func() error{
		"get a ConfigMap": func() error {
			_, err := agent.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{})
			return err
		},
		"list its node's pods": func() error {
			_, err := agent.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
			return err
		},
		"get its node": func() error {
			_, err := agent.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			return err
		},
		"create an event": func() error {
			_, err := agent.CoreV1().Events(ns).Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{GenerateName: "e2e-kind-"},
				InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "cm"},
				Reason:         "Test", Message: "from the agent's ServiceAccount", Type: corev1.EventTypeNormal,
			}, metav1.CreateOptions{})
			return err
		},
	}
	for what, call := range allowed {
		if err := call(); err != nil {
			t.Errorf("%s: %v, want it allowed", what, err)
		}
	}

	refused := map[string]func() error{
		"list ConfigMaps": func() error {
			_, err := agent.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
			return err
		},
		"watch ConfigMaps": func() error {
			w, err := agent.CoreV1().ConfigMaps(ns).Watch(short, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		},
		"update a ConfigMap": func() error {
			_, err := agent.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "changed"}}, metav1.UpdateOptions{})
			return err
		},
		"create a ConfigMap": func() error {
			_, err := agent.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{})
			return err
		},
		"get a Secret": func() error {
			_, err := agent.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{})
			return err
		},
		"list Secrets": func() error {
			_, err := agent.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			return err
		},
		"delete a pod": func() error {
			return agent.CoreV1().Pods("nodeagent").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		},
		"patch a node": func() error {
			_, err := agent.CoreV1().Nodes().Patch(ctx, node, "application/merge-patch+json",
				[]byte(`{"metadata":{"labels":{"e2e-kind":"x"}}}`), metav1.PatchOptions{})
			return err
		},
	}
	for what, call := range refused {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want Forbidden", what, err)
		}
	}
}
