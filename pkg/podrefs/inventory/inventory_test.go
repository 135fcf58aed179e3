package inventory

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory/inventorytest"
)

// List keeps the running, scheduled pods that are not terminating, and what analyze needs of each
// object, and takes a refused Secret list as "unknown", not as a failure.
func TestList(t *testing.T) {
	client := inventorytest.FakeCluster()
	inv, err := List(context.Background(), client, "", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Nodes) != 1 || inv.Nodes[0].TTL != 0 || inv.Nodes[0].TTLMissing != "" || len(inv.Pods) != 1 || inv.Pods[0].Name != "running" {
		t.Errorf("nodes %+v, pods %+v; want the node with its TTL and only the running pod", inv.Nodes, inv.Pods)
	}
	if exists, immutable, known := inv.Exists(model.ConfigMap, "ns", "frozen"); !exists || !immutable || !known {
		t.Errorf("ConfigMap frozen: exists %v, immutable %v, known %v", exists, immutable, known)
	}
	if exists, _, _ := inv.Exists(model.Secret, "ns", "other"); exists || !inv.SecretsListed {
		t.Errorf("an unlisted Secret exists (%v), or Secrets were not listed (%v)", exists, inv.SecretsListed)
	}

	client.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", nil)
	})
	inv, err = List(context.Background(), client, "", 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	if exists, immutable, known := inv.Exists(model.Secret, "ns", "anything"); inv.SecretsListed || !exists || immutable || known {
		t.Errorf("Secrets forbidden: listed %v; Secret taken as exists %v, immutable %v, known %v; want not listed, exists, mutable, unknown", inv.SecretsListed, exists, immutable, known)
	}

	// A forbidden list analyze cannot do without fails the run, saying
	// which role to bind.
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
	})
	if _, err := List(context.Background(), client, "", 500, nil); err == nil || !strings.Contains(err.Error(), "listing pods") ||
		!strings.Contains(err.Error(), "nodeagent-analyze ClusterRole") {
		t.Errorf("pods forbidden: %v; want an error that names the list and the role to bind", err)
	}
}
