package csidriver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
)

// The access check asks about the pod's service account, its groups, the
// verb get and the one ConfigMap, and refuses with the reason the
// apiserver gives.
func TestAccessReviewer(t *testing.T) {
	t.Parallel()
	var asked authorizationv1.SubjectAccessReview
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/apis/authorization.k8s.io/v1/subjectaccessreviews" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&asked); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		asked.Status.Allowed = asked.Spec.ResourceAttributes.Name == "allowed"
		if !asked.Status.Allowed {
			asked.Status.Reason = "no RoleBinding grants it"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&asked)
	}))
	defer server.Close()
	reviewer, err := NewAccessReviewer(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	pod := podInfo{Namespace: "shop", Name: "web-0", UID: "uid", ServiceAccount: "web"}
	if err := reviewer.MayGet(context.Background(), pod, "allowed"); err != nil {
		t.Errorf("an allowed read: %v", err)
	}
	spec := asked.Spec
	attrs := spec.ResourceAttributes
	if spec.User != "system:serviceaccount:shop:web" || !strings.Contains(strings.Join(spec.Groups, ","), "system:serviceaccounts:shop") ||
		attrs.Namespace != "shop" || attrs.Verb != "get" || attrs.Resource != "configmaps" || attrs.Group != "" {
		t.Errorf("asked %+v about %+v", spec, attrs)
	}
	err = reviewer.MayGet(context.Background(), pod, "secret-config")
	if err == nil || !strings.Contains(err.Error(), "no RoleBinding grants it") || !strings.Contains(err.Error(), "shop/web may not get configmap") {
		t.Errorf("a refused read: %v", err)
	}
	if err := reviewer.MayGet(context.Background(), podInfo{Namespace: "shop"}, "allowed"); err == nil {
		t.Error("a call without a service account was allowed")
	}
}

// denyAll refuses every read.
type denyAll struct{}

func (denyAll) MayGet(_ context.Context, pod podInfo, configMap string) error {
	return errors.New("service account " + pod.ServiceAccount + " may not get configmap " + configMap)
}

// With the access check on, a refused read is PermissionDenied and leaves
// nothing behind.
func TestPublishWithTheAccessCheck(t *testing.T) {
	t.Parallel()
	h := newHarness(t, configMap("app", map[string]string{"k": "1"}))
	h.halt()
	h.access = denyAll{}
	h.start()
	v := h.newVolume("uid-1", "config", map[string]string{"configMap": "app"})
	wantCode(t, h.publish(v), codes.PermissionDenied, "may not get configmap app")
	if h.read(v, "k") != "" || h.driver.Watching() != 0 {
		t.Errorf("a refused volume left a file or a watch (%d)", h.driver.Watching())
	}
}
