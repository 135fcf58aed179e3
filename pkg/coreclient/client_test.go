package coreclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
)

// request is what the apiserver would see of one call.
type request struct {
	Method, URL, Accept, ContentType, UserAgent, Body string
}

// recorder is an apiserver that records every request and answers 404.
type recorder struct {
	mu       sync.Mutex
	requests []request
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests = append(r.requests, request{req.Method, req.URL.String(), req.Header.Get("Accept"),
		req.Header.Get("Content-Type"), req.Header.Get("User-Agent"), string(body)})
	r.mu.Unlock()
	http.NotFound(w, req)
}

// calls is every call the agent makes, through one client or the other.
type calls struct {
	configMaps func(namespace string) interface {
		Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error)
		List(context.Context, metav1.ListOptions) (*corev1.ConfigMapList, error)
	}
	watchConfigMaps func(ctx context.Context, namespace string, opts metav1.ListOptions) error
	listPods        func(ctx context.Context, opts metav1.ListOptions) error
	watchPods       func(ctx context.Context, opts metav1.ListOptions) error
	listNodes       func(ctx context.Context, opts metav1.ListOptions) error
	watchNodes      func(ctx context.Context, opts metav1.ListOptions) error
	sink            record.EventSink
}

func (c calls) run(ctx context.Context) {
	cm := c.configMaps("team-a")
	_, _ = cm.Get(ctx, "app", metav1.GetOptions{})
	_, _ = cm.Get(ctx, "app", metav1.GetOptions{ResourceVersion: "0"})
	byName := metav1.ListOptions{FieldSelector: "metadata.name=app", ResourceVersion: "0", Limit: 500}
	_, _ = cm.List(ctx, byName)
	_ = c.watchConfigMaps(ctx, "team-a", metav1.ListOptions{FieldSelector: "metadata.name=app", ResourceVersion: "12", AllowWatchBookmarks: true, TimeoutSeconds: ptr(int64(1800))})
	onNode := metav1.ListOptions{FieldSelector: "spec.nodeName=node-1", ResourceVersion: "0"}
	_ = c.listPods(ctx, onNode)
	_ = c.watchPods(ctx, onNode)
	_ = c.listNodes(ctx, metav1.ListOptions{FieldSelector: "metadata.name=node-1"})
	_ = c.watchNodes(ctx, metav1.ListOptions{FieldSelector: "metadata.name=node-1"})
	event := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "app.1", Namespace: "team-a"}, Reason: "FailedMount", Count: 1}
	_, _ = c.sink.Create(event)
	_, _ = c.sink.Update(event)
	_, _ = c.sink.Patch(event, []byte(`{"count":2}`))
}

func ptr[T any](v T) *T { return &v }

// TestRequestsAreClientGosRequests sends every call the agent makes through
// client-go's clientset and through this client, over JSON and protobuf,
// and wants the same requests: method, URL, query, headers and body.
func TestRequestsAreClientGosRequests(t *testing.T) {
	for _, contentType := range []string{"", "application/vnd.kubernetes.protobuf"} {
		t.Run("content-type="+contentType, func(t *testing.T) {
			record := func(build func(*rest.Config) calls) []request {
				rec := &recorder{}
				server := httptest.NewServer(rec)
				defer server.Close()
				config := &rest.Config{Host: server.URL, UserAgent: "nodeagent/test"}
				config.ContentType = contentType
				if contentType != "" {
					config.AcceptContentTypes = contentType + ",application/json"
				}
				build(config).run(context.Background())
				return rec.requests
			}
			want := record(func(config *rest.Config) calls {
				clientset, err := kubernetes.NewForConfig(config)
				if err != nil {
					t.Fatal(err)
				}
				core := clientset.CoreV1()
				return calls{
					configMaps: func(ns string) interface {
						Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error)
						List(context.Context, metav1.ListOptions) (*corev1.ConfigMapList, error)
					} {
						return core.ConfigMaps(ns)
					},
					watchConfigMaps: func(ctx context.Context, ns string, o metav1.ListOptions) error {
						_, err := core.ConfigMaps(ns).Watch(ctx, o)
						return err
					},
					listPods: func(ctx context.Context, o metav1.ListOptions) error {
						_, err := core.Pods("").List(ctx, o)
						return err
					},
					watchPods: func(ctx context.Context, o metav1.ListOptions) error {
						_, err := core.Pods("").Watch(ctx, o)
						return err
					},
					listNodes: func(ctx context.Context, o metav1.ListOptions) error { _, err := core.Nodes().List(ctx, o); return err },
					watchNodes: func(ctx context.Context, o metav1.ListOptions) error {
						_, err := core.Nodes().Watch(ctx, o)
						return err
					},
					sink: &typedcorev1.EventSinkImpl{Interface: core.Events("")},
				}
			})
			got := record(func(config *rest.Config) calls {
				client, err := NewForConfig(config)
				if err != nil {
					t.Fatal(err)
				}
				return calls{
					configMaps: func(ns string) interface {
						Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error)
						List(context.Context, metav1.ListOptions) (*corev1.ConfigMapList, error)
					} {
						return client.ConfigMaps(ns)
					},
					watchConfigMaps: func(ctx context.Context, ns string, o metav1.ListOptions) error {
						_, err := client.ConfigMaps(ns).Watch(ctx, o)
						return err
					},
					listPods: func(ctx context.Context, o metav1.ListOptions) error {
						_, err := client.Pods("").List(ctx, o)
						return err
					},
					watchPods: func(ctx context.Context, o metav1.ListOptions) error {
						_, err := client.Pods("").Watch(ctx, o)
						return err
					},
					listNodes: func(ctx context.Context, o metav1.ListOptions) error {
						_, err := client.Nodes().List(ctx, o)
						return err
					},
					watchNodes: func(ctx context.Context, o metav1.ListOptions) error {
						_, err := client.Nodes().Watch(ctx, o)
						return err
					},
					sink: client.EventSink(),
				}
			})
			if len(want) != 11 {
				t.Fatalf("client-go sent %d requests, want 11: %+v", len(want), want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("requests differ from client-go's (-client-go +coreclient):\n%s", diff)
			}
		})
	}
}

// TestSchemeIsTheCoreGroupAlone guards the reason this package exists.
func TestSchemeIsTheCoreGroupAlone(t *testing.T) {
	for gvk := range Scheme.AllKnownTypes() {
		if gvk.Group != "" {
			t.Errorf("Scheme knows %v, of group %q: only the core group belongs here", gvk, gvk.Group)
		}
	}
	if !Scheme.Recognizes(corev1.SchemeGroupVersion.WithKind("ConfigMap")) {
		t.Error("Scheme does not know core/v1 ConfigMap")
	}
}
