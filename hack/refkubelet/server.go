package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
)

// secureServer gives the kubelet's API server what the kubelet's own
// start-up gives it, and RunKubelet does not: TLS (a self-signed serving
// certificate under CertDirectory) and authentication and authorization
// by its configuration. Without them the kubelet would serve plain HTTP
// to anyone. Nothing is done when the server is off.
func secureServer(ctx context.Context, server *options.KubeletServer, client clientset.Interface, deps *kubelet.Dependencies) error {
	if !server.EnableServer {
		return nil
	}
	tlsOptions, err := initializeTLS(ctx, server)
	if err != nil {
		return fmt.Errorf("setting up the kubelet server's TLS: %w", err)
	}
	auth, runCAReload, err := kubeletapp.BuildAuth(types.NodeName(server.HostnameOverride), client, server.KubeletConfiguration)
	if err != nil {
		return fmt.Errorf("setting up the kubelet server's authentication: %w", err)
	}
	runCAReload(ctx.Done())
	deps.TLSOptions, deps.Auth = tlsOptions, auth
	return nil
}
