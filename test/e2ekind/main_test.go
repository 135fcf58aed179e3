//go:build e2e

// Package e2ekind tests nodeagent deployed on a real kind cluster: real
// kubelets and containerd on three nodes, the agent as the DaemonSet of
// deploy/overlays/kind, its image loaded with `kind load image-archive`.
// `make e2e-kind` (hack/e2e-kind.sh) creates the cluster, deploys the agent
// and runs this package; run alone, without NODEAGENT_KIND_CLUSTER, it skips.
//
// The nodes are kind's Docker containers: a test reads what is on a node's
// disk with `docker exec`, and compares the agent's files
// (/var/lib/nodeagent) with the files the node's own kubelet wrote for the
// same pod (/var/lib/kubelet).
package e2ekind

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The cluster, from the environment hack/e2e-kind.sh sets.
var (
	clusterName    string
	kubeconfigPath string
	podImage       string
	outputDir      string
	// agentImage is the image make image built and make e2e-kind deployed
	// (nodeagent:<version>).
	agentImage  string
	adminConfig *rest.Config
	clientset   kubernetes.Interface
)

func TestMain(m *testing.M) {
	clusterName = os.Getenv("NODEAGENT_KIND_CLUSTER")
	if clusterName == "" {
		fmt.Println("e2ekind: NODEAGENT_KIND_CLUSTER is not set; these tests run through `make e2e-kind`")
		os.Exit(0)
	}
	kubeconfigPath = os.Getenv("NODEAGENT_KIND_KUBECONFIG")
	podImage = os.Getenv("NODEAGENT_KIND_POD_IMAGE")
	agentImage = os.Getenv("NODEAGENT_KIND_AGENT_IMAGE")
	if !strings.Contains(agentImage, ":") {
		fmt.Fprintf(os.Stderr, "e2ekind: NODEAGENT_KIND_AGENT_IMAGE %q is not an image with a tag; make e2e-kind sets it\n", agentImage)
		os.Exit(1)
	}
	outputDir = os.Getenv("NODEAGENT_KIND_OUTPUT")
	var err error
	adminConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2ekind: kubeconfig %q: %v\n", kubeconfigPath, err)
		os.Exit(1)
	}
	adminConfig.QPS, adminConfig.Burst = 50, 100
	clientset, err = kubernetes.NewForConfig(adminConfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2ekind: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
