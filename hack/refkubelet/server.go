package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/component-base/configz"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	"k8s.io/kubernetes/pkg/kubelet"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
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
	if err := publishConfigz(&server.KubeletConfiguration); err != nil {
		return fmt.Errorf("publishing the configuration on /configz: %w", err)
	}
	return nil
}

// publishConfigz puts the kubelet's configuration on its /configz, under
// the "kubeletconfig" key and in its versioned (v1beta1) form, as the
// kubelet's own start-up does and RunKubelet does not: that is what
// `nodeagent analyze` reads through the apiserver's node proxy.
func publishConfigz(config *kubeletconfig.KubeletConfiguration) error {
	scheme, _, err := kubeletscheme.NewSchemeAndCodecs()
	if err != nil {
		return err
	}
	versioned := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := scheme.Convert(config, versioned, nil); err != nil {
		return err
	}
	entry, err := configz.New("kubeletconfig")
	if err != nil {
		return err
	}
	return setConfigz(entry, versioned)
}
