package csidriver

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/nodeagent-io/nodeagent/pkg/accessreview"
)

// AccessReviewer asks the apiserver, with a SubjectAccessReview, whether a
// pod's service account may get the ConfigMap a volume names: beyond the
// kubelet, which serves a pod every ConfigMap of its namespace. It needs
// create on subjectaccessreviews (the chart's csi.checkAccess).
type AccessReviewer struct {
	reviewer *accessreview.Reviewer
}

// NewAccessReviewer returns a reviewer on config's apiserver.
func NewAccessReviewer(config *rest.Config) (*AccessReviewer, error) {
	r, err := accessreview.New(config)
	if err != nil {
		return nil, err
	}
	return &AccessReviewer{reviewer: r}, nil
}

// MayGet returns nil if pod's service account may get configMap in the
// pod's namespace, and an error that says why not otherwise.
func (a *AccessReviewer) MayGet(ctx context.Context, pod podInfo, configMap string) error {
	if pod.ServiceAccount == "" {
		return fmt.Errorf("the call names no service account (csi.storage.k8s.io/serviceAccount.name), so access to configmap %q cannot be checked", configMap)
	}
	err := a.reviewer.May(ctx, accessreview.ServiceAccount{Namespace: pod.Namespace, Name: pod.ServiceAccount}, "configmaps", configMap, "get")
	if denied := (*accessreview.DeniedError)(nil); errors.As(err, &denied) {
		return fmt.Errorf("%w; the driver was installed with its access check on", err)
	}
	return err
}
