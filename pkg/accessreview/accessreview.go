// Package accessreview asks the apiserver, with SubjectAccessReviews,
// whether a pod's service account may read an object of its namespace:
// what the CSI driver reading as the pods will be allowed, asked ahead of
// it (the driver's opt-in access check, and the admission webhook before it
// converts a volume).
//
// Contract: a review that says no is a *DeniedError, which names the
// account, the verb, the resource, the object and the kubectl auth can-i
// that asks the same; a review that could not be made is any other error.
// The reviewer needs create on subjectaccessreviews, which changes nothing.
package accessreview

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// scheme knows the SubjectAccessReview alone: the agent-only build links
// no other API group (pkg/coreclient).
var scheme = runtime.NewScheme()

func init() { utilruntime.Must(authorizationv1.AddToScheme(scheme)) }

// ServiceAccount is a pod's service account.
type ServiceAccount struct {
	Namespace, Name string
}

// User is the account's user name, as its tokens authenticate.
func (a ServiceAccount) User() string {
	return "system:serviceaccount:" + a.Namespace + ":" + a.Name
}

// DeniedError is a review's no.
type DeniedError struct {
	Account              ServiceAccount
	Verb, Resource, Name string
	// Reason is the apiserver's, or what stands for it when it gives none.
	Reason string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("service account %s/%s may not %s %s %q (%s); check with: kubectl auth can-i %s %s/%s -n %s --as=%s",
		e.Account.Namespace, e.Account.Name, e.Verb, singular(e.Resource), e.Name, e.Reason,
		e.Verb, e.Resource, e.Name, e.Account.Namespace, e.Account.User())
}

// singular is "configmap" for "configmaps", as kubectl's messages say it.
func singular(resource string) string {
	if n := len(resource); n > 1 && resource[n-1] == 's' {
		return resource[:n-1]
	}
	return resource
}

// Reviewer makes SubjectAccessReviews.
type Reviewer struct {
	client rest.Interface
}

// New returns a reviewer on config's apiserver.
func New(config *rest.Config) (*Reviewer, error) {
	c := rest.CopyConfig(config)
	c.GroupVersion = &authorizationv1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the SubjectAccessReview client: %w", err)
	}
	return &Reviewer{client: client}, nil
}

// May returns nil if account may do every one of verbs on the object name
// of resource (a core resource) in its namespace, a *DeniedError for the
// first it may not, or the error of a review that failed.
func (r *Reviewer) May(ctx context.Context, account ServiceAccount, resource, name string, verbs ...string) error {
	for _, verb := range verbs {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   account.User(),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + account.Namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: account.Namespace, Verb: verb, Resource: resource, Name: name,
			},
		}}
		result := &authorizationv1.SubjectAccessReview{}
		if err := r.client.Post().Resource("subjectaccessreviews").Body(review).Do(ctx).Into(result); err != nil {
			return fmt.Errorf("checking whether %s may %s %s %q: %w", account.User(), verb, singular(resource), name, err)
		}
		if !result.Status.Allowed {
			why := result.Status.Reason
			if why == "" {
				why = "no RBAC rule allows it"
			}
			return &DeniedError{Account: account, Verb: verb, Resource: resource, Name: name, Reason: why}
		}
	}
	return nil
}
