package csidriver

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// accessScheme knows the SubjectAccessReview alone: the agent-only build
// links no other API group (pkg/coreclient).
var accessScheme = runtime.NewScheme()

func init() { utilruntime.Must(authorizationv1.AddToScheme(accessScheme)) }

// AccessReviewer asks the apiserver, with a SubjectAccessReview, whether a
// pod's service account may get the ConfigMap a volume names: beyond the
// kubelet, which serves a pod every ConfigMap of its namespace. It needs
// create on subjectaccessreviews (the chart's csi.checkAccess).
type AccessReviewer struct {
	client rest.Interface
}

// NewAccessReviewer returns a reviewer on config's apiserver.
func NewAccessReviewer(config *rest.Config) (*AccessReviewer, error) {
	c := rest.CopyConfig(config)
	c.GroupVersion = &authorizationv1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(accessScheme).WithoutConversion()
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("building the SubjectAccessReview client: %w", err)
	}
	return &AccessReviewer{client: client}, nil
}

// MayGet returns nil if pod's service account may get configMap in the
// pod's namespace, and an error that says why not otherwise.
func (a *AccessReviewer) MayGet(ctx context.Context, pod podInfo, configMap string) error {
	if pod.ServiceAccount == "" {
		return fmt.Errorf("the call names no service account (csi.storage.k8s.io/serviceAccount.name), so access to configmap %q cannot be checked", configMap)
	}
	user := "system:serviceaccount:" + pod.Namespace + ":" + pod.ServiceAccount
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + pod.Namespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: pod.Namespace, Verb: "get", Resource: "configmaps", Name: configMap,
		},
	}}
	result := &authorizationv1.SubjectAccessReview{}
	err := a.client.Post().Resource("subjectaccessreviews").Body(review).Do(ctx).Into(result)
	if err != nil {
		return fmt.Errorf("checking whether %s may get configmap %q: %w", user, configMap, err)
	}
	if !result.Status.Allowed {
		why := result.Status.Reason
		if why == "" {
			why = "no RBAC rule allows it"
		}
		return fmt.Errorf("service account %s/%s may not get configmap %q (%s); the driver was installed with its access check on", pod.Namespace, pod.ServiceAccount, configMap, why)
	}
	return nil
}
