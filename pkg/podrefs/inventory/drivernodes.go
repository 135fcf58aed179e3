package inventory

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// DriverRegistered says whether a node's CSINode lists nodeagent's CSI
// driver: whether the kubelet of the node has a driver to publish, update
// and unpublish its pods' volumes of the driver.
func DriverRegistered(n *storagev1.CSINode) bool {
	for _, d := range n.Spec.Drivers {
		if d.Name == podrefs.DriverName {
			return true
		}
	}
	return false
}

// ServesDriver says whether node has the driver registered; true where the
// CSINodes could not be read, as nothing is known of them.
func (inv *Inventory) ServesDriver(node string) bool {
	return !inv.DriverNodesListed || inv.DriverNodes[node]
}

// listDriverNodes reads the CSINodes; a user who may not list them gets
// DriverNodesListed false.
func (inv *Inventory) listDriverNodes(ctx context.Context, client kubernetes.Interface) error {
	list, err := client.StorageV1().CSINodes().List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing CSINodes: %w", err)
	}
	inv.DriverNodesListed, inv.DriverNodes = true, map[string]bool{}
	for i := range list.Items {
		if DriverRegistered(&list.Items[i]) {
			inv.DriverNodes[list.Items[i].Name] = true
		}
	}
	return nil
}
