//go:build e2e

// Package e2e runs nodeagent against a real etcd and kube-apiserver started
// on loopback (internal/controlplane). `make e2e` builds what it needs first.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
)

// One control plane serves the whole package: starting it is the slowest
// part of a test. Tests that restart it leave it running and ready.
var (
	cp        *controlplane.ControlPlane
	clientset kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	// The owner fields of atomic volumes (KEP-5936) are kept only by an
	// apiserver with their gate on: the differential test's pods carry them.
	cp, err = controlplane.Start(ctx, controlplane.Options{ExtraAPIServerArgs: []string{"--feature-gates=AtomicWriteVolumeUserFields=true"}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local control plane: %v\n", err)
		return 1
	}
	defer cp.Stop()
	// Ctrl-C or a CI timeout's SIGTERM: stop the control plane before
	// dying, so its temporary directory goes too.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-signals
		fmt.Fprintf(os.Stderr, "received %s: stopping the local control plane\n", sig)
		cp.Stop()
		os.Exit(1)
	}()
	fmt.Printf("local control plane (etcd %s, kube-apiserver %s) ready in %s at %s\n",
		controlplane.EtcdVersion, controlplane.KubernetesVersion, cp.StartupDuration.Round(time.Millisecond), cp.APIServerURL)
	clientset, err = kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating a client: %v\n", err)
		return 1
	}
	failures := captureFailures()
	code := m.Run()
	summary := failures()
	if err := writeReliabilityTable(); err != nil {
		fmt.Fprintf(os.Stderr, "writing the reliability table: %v\n", err)
	}
	if code != 0 {
		// The failures' own words last, after the control plane's, where
		// a CI log's tail shows them.
		fmt.Fprintf(os.Stderr, "control plane logs after failure:\n%s\n", cp.Logs(15))
		fmt.Print(summary)
	}
	return code
}
