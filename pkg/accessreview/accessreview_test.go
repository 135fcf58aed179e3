package accessreview

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
)

// May asks one review per verb, as the account with its groups, about the
// one object, and stops at the first no, which is a *DeniedError naming
// the check; a review that cannot be made is another error.
func TestMay(t *testing.T) {
	t.Parallel()
	var asked []authorizationv1.SubjectAccessReviewSpec
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || r.URL.Path != "/apis/authorization.k8s.io/v1/subjectaccessreviews" {
			http.Error(w, "not a review", http.StatusBadRequest)
			return
		}
		asked = append(asked, review.Spec)
		review.Status.Allowed = review.Spec.ResourceAttributes.Verb != "watch"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	}))
	defer server.Close()
	r, err := New(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	account := ServiceAccount{Namespace: "shop", Name: "web"}
	err = r.May(context.Background(), account, "secrets", "tls", "get", "list", "watch", "get")
	var denied *DeniedError
	if !errors.As(err, &denied) || denied.Verb != "watch" || denied.Resource != "secrets" || denied.Name != "tls" || denied.Reason != "no RBAC rule allows it" {
		t.Fatalf("May: %v, want a DeniedError for watch", err)
	}
	if want := `service account shop/web may not watch secret "tls" (no RBAC rule allows it); check with: kubectl auth can-i watch secrets/tls -n shop --as=system:serviceaccount:shop:web`; err.Error() != want {
		t.Errorf("message %q,\nwant    %q", err, want)
	}
	if len(asked) != 3 {
		t.Fatalf("%d reviews, want 3: none after the first no", len(asked))
	}
	for _, spec := range asked {
		attrs := spec.ResourceAttributes
		if spec.User != "system:serviceaccount:shop:web" || !slices.Contains(spec.Groups, "system:serviceaccounts:shop") || attrs.Namespace != "shop" || attrs.Group != "" {
			t.Errorf("asked %+v about %+v", spec, attrs)
		}
	}
	if err := r.May(context.Background(), account, "configmaps", "app", "get", "list"); err != nil {
		t.Errorf("allowed reads: %v", err)
	}
	server.Close()
	if err := r.May(context.Background(), account, "configmaps", "app", "get"); err == nil || errors.As(err, &denied) {
		t.Errorf("with the apiserver gone: %v, want an error that is no denial", err)
	}
}
