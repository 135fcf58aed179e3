package configmapcache

import (
	"context"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
)

// fakeSecretClient tells the reflectors that the fake cannot stream a
// watch-list, as fakeConfigMapClient does.
type fakeSecretClient struct {
	typedcorev1.SecretInterface
}

func (fakeSecretClient) IsWatchListSemanticsUnSupported() bool { return true }

func immutableSecret(value string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls"},
		Immutable: ptr.To(true), Data: map[string][]byte{"tls.crt": []byte(value)}}
}

// A Secret's watch serves reads with no GET, reports changes, turns a
// deletion into NotFound, and keeps watching an immutable Secret, so that
// one recreated under its name reaches the volumes.
func TestSecretWatchesFollowARecreatedImmutableSecret(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(immutableSecret("v1"))
	var changes atomic.Int32
	w, err := NewSecretWatches(func(namespace, _ string) SecretClient {
		return fakeSecretClient{client.CoreV1().Secrets(namespace)}
	}, func(string, string) { changes.Add(1) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	w.Add(ns, "tls")
	if s, err := w.GetSecret(ctx, ns, "tls"); err != nil || string(s.Data["tls.crt"]) != "v1" {
		t.Fatalf("got %v, %v; want v1", s, err)
	}
	if err := client.CoreV1().Secrets(ns).Delete(ctx, "tls", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the deletion to reach the store", func() bool {
		_, err := w.GetSecret(ctx, ns, "tls")
		return apierrors.IsNotFound(err)
	})
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, immutableSecret("v2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the recreated Secret to reach the store", func() bool {
		s, err := w.GetSecret(ctx, ns, "tls")
		return err == nil && string(s.Data["tls.crt"]) == "v2"
	})
	if changes.Load() < 2 {
		t.Errorf("onChange called %d times; want the deletion and the creation", changes.Load())
	}
	for _, a := range client.Actions() {
		if a.GetVerb() == "get" {
			t.Errorf("the watches sent a GET: %v", a)
		}
	}
	w.Remove(ns, "tls")
	if w.Watching() != 0 {
		t.Errorf("%d watches open after the last reference went", w.Watching())
	}
	if _, err := w.GetSecret(ctx, ns, "tls"); err == nil {
		t.Error("GetSecret of a Secret no volume references succeeded")
	}
}
