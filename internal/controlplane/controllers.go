package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
)

// ServiceAccountControllers are the controllers every control plane runs,
// because the ServiceAccount admission plugin needs what they make: each
// namespace's default ServiceAccount (without it no pod is admitted) and
// its kube-root-ca.crt ConfigMap (which every pod's kube-api-access volume
// reads).
var ServiceAccountControllers = []string{"serviceaccount", "root-ca-cert-publisher"}

// controllerManagerArgs runs only the named controllers of
// kube-controller-manager, as the admin identity (no per-controller service
// accounts: there is no token controller to mint them), without leader
// election (there is one instance), serving /healthz on loopback. rootCA is
// what root-ca-cert-publisher publishes: the apiserver's serving
// certificate, which is what a pod must trust to reach it.
func controllerManagerArgs(dir, kubeconfig, rootCA string, port int, controllers []string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--root-ca-file=" + rootCA,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		// A self-signed serving certificate, generated at start.
		"--cert-dir=" + filepath.Join(dir, "controller-manager-certs"),
		"--profiling=false",
		"--v=1",
	}
}

// checkControllerManagerHealthy asks kube-controller-manager's /healthz,
// which it serves to anyone. Its certificate is self-signed and only the
// status matters here, so it is not verified.
func checkControllerManagerHealthy(ctx context.Context, url string) error {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	return checkEndpoint(ctx, client, url, "/healthz")
}

func (cp *ControlPlane) startControllerManager(ctx context.Context) error {
	if err := cp.controllerManager.start(); err != nil {
		return err
	}
	err := waitFor(ctx, cp.timeout, cp.controllerManager, func(ctx context.Context) error {
		return checkControllerManagerHealthy(ctx, cp.controllerManagerURL)
	})
	if err != nil {
		return fmt.Errorf("kube-controller-manager did not become healthy: %w\n--- kube-controller-manager.log\n%s", err, cp.controllerManager.tail(30))
	}
	return nil
}
