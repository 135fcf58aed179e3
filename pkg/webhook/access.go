package webhook

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/accessreview"
	"github.com/nodeagent-io/nodeagent/pkg/convert"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// AccessChecker says whether a service account may do verbs on an object
// of its namespace (accessreview.Reviewer): nil, a
// *accessreview.DeniedError, or the error of a check that failed.
type AccessChecker interface {
	May(ctx context.Context, account accessreview.ServiceAccount, resource, name string, verbs ...string) error
}

// readVerbs are what the driver reading as the pod does with each object
// of a volume: its first read, and the list and watch of its one watch.
var readVerbs = []string{"get", "list", "watch"}

// keepUnreadable leaves with the kubelet each volume the decisions convert
// whose objects the pod's service account may not read, as the driver
// reading as the pods would refuse it (and the pod would wait in
// ContainerCreating), and returns a warning for each. A check that fails
// leaves its volume too: the kubelet serving it is never wrong.
func (h *Handler) keepUnreadable(ctx context.Context, pod *corev1.Pod, namespace string, decisions []convert.Decision) []string {
	if h.Access == nil {
		return nil
	}
	account := accessreview.ServiceAccount{Namespace: namespace, Name: podrefs.ServiceAccountOf(&pod.Spec)}
	var out []string
	for i := range decisions {
		d := &decisions[i]
		if !d.Converted {
			continue
		}
		err := h.mayRead(ctx, account, d.Attributes)
		if err == nil {
			continue
		}
		d.Converted, d.InPlace = false, false
		if denied := (*accessreview.DeniedError)(nil); errors.As(err, &denied) {
			d.Reason = fmt.Sprintf("the driver reads as the pod, and %v; grant it (nodeagent convert writes the Role and RoleBinding) and the pod's next replacement moves", err)
		} else {
			d.Reason = fmt.Sprintf("the pod's access could not be checked (%v)", err)
		}
		out = append(out, fmt.Sprintf("%s: volume %s is served by the kubelet, not the driver: %s", ServeLabel, d.Volume, d.Reason))
	}
	return out
}

// mayRead checks every object the driver's volume of attrs reads.
func (h *Handler) mayRead(ctx context.Context, account accessreview.ServiceAccount, attrs map[string]string) error {
	source, problems := podrefs.ParseDriverAttributes(attrs)
	if len(problems) > 0 {
		return fmt.Errorf("the driver's attributes: %v", problems)
	}
	for _, ref := range source.Reads() {
		resource := "configmaps"
		if ref.Kind == model.Secret {
			resource = "secrets"
		}
		if err := h.Access.May(ctx, account, resource, ref.Name, readVerbs...); err != nil {
			return err
		}
	}
	return nil
}
