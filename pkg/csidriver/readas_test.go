package csidriver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// authorizer is a fake apiserver's authorization: which ConfigMaps each
// token may read, and which token each request came with.
type authorizer struct {
	mu   sync.Mutex
	may  map[string][]string
	used []string
}

func newAuthorizer() *authorizer { return &authorizer{may: map[string][]string{}} }

func (a *authorizer) allow(token string, configMaps ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.may[token] = append(a.may[token], configMaps...)
}

// requests is how many requests came so far; usedSince the tokens of
// those after the first n.
func (a *authorizer) requests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.used)
}

func (a *authorizer) usedSince(n int) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.used[n:])
}

func (a *authorizer) check(token, name string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.used = append(a.used, token)
	if token == "" || !slices.Contains(a.may[token], name) {
		return apierrors.NewForbidden(corev1.Resource("configmaps"), name, fmt.Errorf("the token may not"))
	}
	return nil
}

func (a *authorizer) clientAs(h *harness) ClientAs {
	return func(token, namespace string) (PodAPI, error) {
		return PodAPI{
			ConfigMaps: authorizedClient[*corev1.ConfigMap, *corev1.ConfigMapList]{inner: h.client.CoreV1().ConfigMaps(namespace), token: token, a: a},
			// The authorizer names Secrets secret/<name>.
			Secrets: authorizedClient[*corev1.Secret, *corev1.SecretList]{inner: h.client.CoreV1().Secrets(namespace), token: token, a: a, prefix: "secret/"},
		}, nil
	}
}

// typedClient is client-go's typed client of one kind of object.
type typedClient[T, L any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// authorizedClient is the fake clientset's client, as one token; prefix
// is how the authorizer names its kind's objects.
type authorizedClient[T, L any] struct {
	inner  typedClient[T, L]
	token  string
	a      *authorizer
	prefix string
}

// named is the name a list or watch selects.
func named(opts metav1.ListOptions) string {
	name, _ := fields.ParseSelectorOrDie(opts.FieldSelector).RequiresExactMatch("metadata.name")
	return name
}

func (c authorizedClient[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	if err := c.a.check(c.token, c.prefix+name); err != nil {
		var none T
		return none, err
	}
	return c.inner.Get(ctx, name, opts)
}

func (c authorizedClient[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	if err := c.a.check(c.token, c.prefix+named(opts)); err != nil {
		var none L
		return none, err
	}
	return c.inner.List(ctx, opts)
}

func (c authorizedClient[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := c.a.check(c.token, c.prefix+named(opts)); err != nil {
		return nil, err
	}
	return c.inner.Watch(ctx, opts)
}

func (authorizedClient[T, L]) IsWatchListSemanticsUnSupported() bool { return true }

// withToken is v published with token, expiring at expires, as the
// kubelet passes it: in the volume context.
func withToken(v volume, token string, expires time.Time) volume {
	raw, _ := json.Marshal(map[string]any{"": map[string]any{"token": token, "expirationTimestamp": expires}})
	attrs := map[string]string{}
	for k, val := range v.attrs {
		attrs[k] = val
	}
	attrs[tokensKey] = string(raw)
	v.attrs = attrs
	return v
}

// Read as the pods, a volume mounts what its pod's token may read and
// nothing else: a pod refused gets PermissionDenied that names its service
// account and the check to run, and no file; a call without a token is
// refused; a republish with a new token is the same volume; the token is
// in no record.
func TestReadAsThePod(t *testing.T) {
	t.Parallel()
	authorize := newAuthorizer()
	authorize.allow("token-a", "app")
	h := newHarnessAs(t, authorize, configMap("app", map[string]string{"k": "1"}))
	expires := time.Now().Add(time.Hour)

	allowed := withToken(h.newVolume("uid-a", "config", map[string]string{"configMap": "app"}), "token-a", expires)
	h.mustPublish(allowed)
	if got := h.read(allowed, "k"); got != "1" {
		t.Fatalf("the allowed pod's file: %q, want 1", got)
	}
	refused := withToken(h.newVolume("uid-b", "config", map[string]string{"configMap": "app"}), "token-b", expires)
	wantCode(t, h.publish(refused), codes.PermissionDenied, "kubectl auth can-i get configmaps/app -n shop --as=system:serviceaccount:shop:")
	if got := h.read(refused, "k"); got != "" {
		t.Errorf("the refused pod's volume has a file: %q", got)
	}
	wantCode(t, h.publish(h.newVolume("uid-c", "config", map[string]string{"configMap": "app"})), codes.FailedPrecondition, "tokenRequests")

	authorize.allow("token-a2", "app")
	if err := h.publish(withToken(allowed, "token-a2", expires.Add(time.Hour))); err != nil {
		t.Errorf("a republish with the pod's next token: %v", err)
	}
	h.setConfigMap("app", map[string]string{"k": "2"})
	h.eventually("the update through the watch", func() bool { return h.read(allowed, "k") == "2" })
	records, err := os.ReadDir(filepath.Join(h.stateDir, "volumes"))
	if err != nil || len(records) != 1 {
		t.Fatalf("records %v, %v; want the allowed volume's", records, err)
	}
	data, err := os.ReadFile(filepath.Join(h.stateDir, "volumes", records[0].Name()))
	if err != nil || strings.Contains(string(data), "token-a") || strings.Contains(string(data), tokensKey) {
		t.Errorf("the record holds the token: %s (%v)", data, err)
	}
	if s := fmt.Sprintf("%v %+v %#v", h.driver.Volumes(), podToken{value: "token-a"}, podToken{value: "token-a"}); strings.Contains(s, "token-a") {
		t.Errorf("a token shows: %s", s)
	}
}

// The ConfigMap's one watch uses the token that expires last; when that
// pod's volume goes, the watch opens again with another's, and updates
// keep coming to the volume left.
func TestReadAsThePodWatchFollowsTheTokens(t *testing.T) {
	t.Parallel()
	authorize := newAuthorizer()
	authorize.allow("short", "app")
	authorize.allow("long", "app")
	h := newHarnessAs(t, authorize, configMap("app", map[string]string{"k": "1"}))
	now := time.Now()
	first := withToken(h.newVolume("uid-1", "config", map[string]string{"configMap": "app"}), "short", now.Add(time.Hour))
	second := withToken(h.newVolume("uid-2", "config", map[string]string{"configMap": "app"}), "long", now.Add(2*time.Hour))
	h.mustPublish(second)
	h.mustPublish(first)
	before := authorize.requests()
	if err := h.unpublish(second); err != nil {
		t.Fatal(err)
	}
	h.eventually("the watch opened again with the first pod's token", func() bool {
		return slices.Contains(authorize.usedSince(before), "short")
	})
	if used := authorize.usedSince(before); slices.Contains(used, "long") {
		t.Errorf("requests after the long token's pod went: %v, want none with it", used)
	}
	h.setConfigMap("app", map[string]string{"k": "2"})
	h.eventually("the update reaches the volume left", func() bool { return h.read(first, "k") == "2" })
}

// A token that expires is replaced, before it does, by a holder's later
// one; a holder's token that expires first is kept while a later exists.
func TestCredentialsRenewBeforeExpiry(t *testing.T) {
	c := newCredentials()
	now := time.Now()
	key := objectRef{model.ConfigMap, "shop", "app"}
	if !c.hold(key, "v1", podToken{value: "a", expires: now.Add(3 * time.Minute)}, now) {
		t.Error("the first token: the watch should open")
	}
	if tok, ok := c.take(key); !ok || tok.value != "a" {
		t.Fatalf("take: %v %v", tok.value, ok)
	}
	if got := c.expiring(now, renewMargin); len(got) != 0 {
		t.Errorf("expiring %v with no later token", got)
	}
	if c.hold(key, "v2", podToken{value: "b", expires: now.Add(time.Hour)}, now) {
		t.Error("a second token while the first works: no reopen")
	}
	if got := c.expiring(now, renewMargin); len(got) != 1 {
		t.Errorf("expiring %v, want the watch on a", got)
	}
	if tok, _ := c.take(key); tok.value != "b" {
		t.Errorf("take: %s, want the later b", tok.value)
	}
	if !c.release(key, "v2") || c.release(key, "v1") {
		t.Error("release: the watch's own token's holder reopens, the last holder's does not")
	}
}

// A pod whose access is revoked gets no further update once its
// republish is refused: its volume keeps its last content while another
// pod's, still allowed, follows the ConfigMap; when its access returns,
// its next republish brings it the ConfigMap at once.
func TestReadAsThePodRevoked(t *testing.T) {
	t.Parallel()
	authorize := newAuthorizer()
	authorize.allow("a1", "app")
	authorize.allow("b1", "app")
	h := newHarnessAs(t, authorize, configMap("app", map[string]string{"k": "1"}))
	expires := time.Now().Add(time.Hour)
	a := withToken(h.newVolume("uid-a", "config", map[string]string{"configMap": "app"}), "a1", expires)
	b := withToken(h.newVolume("uid-b", "config", map[string]string{"configMap": "app"}), "b1", expires)
	h.mustPublish(a)
	h.mustPublish(b)

	// a's account loses its access: its renewed token is refused.
	wantCode(t, h.publish(withToken(a, "a2", expires.Add(time.Hour))), codes.PermissionDenied, "gets no update")
	h.setConfigMap("app", map[string]string{"k": "2"})
	h.eventually("the allowed pod's update", func() bool { return h.read(b, "k") == "2" })
	// The update's remounts run together: a revoked volume that followed
	// would have it by now, or within these few passes.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got := h.read(a, "k"); got != "1" {
			t.Fatalf("the revoked pod's volume holds %q, want its last content 1", got)
		}
	}
	authorize.allow("a2", "app")
	h.mustPublish(withToken(a, "a2", expires.Add(time.Hour)))
	h.eventually("the volume whose access returned has the ConfigMap", func() bool { return h.read(a, "k") == "2" })
}

// With a token directory, a restarted driver opens each watch with the
// token its volume was last published with: an update made while it was
// down arrives without a republish. The token leaves the directory with
// its volume, and a kept token whose volume has no record is removed at
// the start.
func TestRestartReadsWithTheKeptTokens(t *testing.T) {
	t.Parallel()
	authorize := newAuthorizer()
	authorize.allow("token-a", "app")
	h := newHarnessAs(t, authorize, configMap("app", map[string]string{"k": "1"}))
	h.halt()
	h.tokenDir = filepath.Join(t.TempDir(), "tokens")
	h.start()
	v := withToken(h.newVolume("uid-a", "config", map[string]string{"configMap": "app"}), "token-a", time.Now().Add(time.Hour))
	h.mustPublish(v)
	kept := filepath.Join(h.tokenDir, v.id+tokenSuffix)
	if data, err := os.ReadFile(kept); err != nil || !strings.Contains(string(data), "token-a") {
		t.Fatalf("the kept token: %s (%v)", data, err)
	}

	h.halt()
	orphan := filepath.Join(h.tokenDir, "csi-never-recorded"+tokenSuffix)
	if err := os.WriteFile(orphan, []byte(`{"token":"token-x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h.setConfigMap("app", map[string]string{"k": "2"})
	before := authorize.requests()
	h.start()
	h.eventually("the update made while the driver was down", func() bool { return h.read(v, "k") == "2" })
	if used := authorize.usedSince(before); len(used) == 0 || slices.ContainsFunc(used, func(tok string) bool { return tok != "token-a" }) {
		t.Errorf("the restarted driver's requests came with %v, want the kept token-a only", used)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("the token of a volume without a record is still kept: %v", err)
	}
	if err := h.unpublish(v); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kept); !os.IsNotExist(err) {
		t.Errorf("the token of an unpublished volume is still kept: %v", err)
	}
}

// A token directory that is not in memory keeps no token, and the driver
// says so on its node; its volumes are served all the same.
func TestTokenDirOnDiskKeepsNone(t *testing.T) {
	t.Parallel()
	authorize := newAuthorizer()
	authorize.allow("token-a", "app")
	h := newHarnessAs(t, authorize, configMap("app", map[string]string{"k": "1"}))
	h.halt()
	h.tokenDir, h.tokenDirOnDisk = filepath.Join(t.TempDir(), "tokens"), true
	h.start()
	var warned string
	h.eventually("a TokenDirUnusable event on the node", func() bool {
		select {
		case e := <-h.events.Events:
			warned = e
		default:
		}
		return strings.Contains(warned, "TokenDirUnusable")
	})
	if !strings.Contains(warned, "not on a tmpfs") || !strings.Contains(warned, "csi.tokenDir") {
		t.Errorf("the event %q does not say why and what to do", warned)
	}
	v := withToken(h.newVolume("uid-a", "config", map[string]string{"configMap": "app"}), "token-a", time.Now().Add(time.Hour))
	h.mustPublish(v)
	if got := h.read(v, "k"); got != "1" {
		t.Errorf("the volume's file: %q, want 1", got)
	}
	if kept, err := os.ReadDir(h.tokenDir); err != nil || len(kept) != 0 {
		t.Errorf("tokens kept on a disk: %v (%v)", kept, err)
	}
}
