package daemon

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig whose one context points at server.
func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// The cluster is found as kubectl finds it: --kubeconfig, then
// $KUBECONFIG, and the pod's service account only when neither says
// anything, even inside a pod.
func TestRESTConfigFindsTheClusterAsKubectlDoes(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1") // as inside a pod
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	// The home file's path is fixed when client-go loads, before any
	// Setenv of HOME: point it at nothing for this test, since the
	// machine's own ~/.kube/config (a kind cluster's, say) would be found.
	home := clientcmd.RecommendedHomeFile
	clientcmd.RecommendedHomeFile = filepath.Join(t.TempDir(), "config")
	t.Cleanup(func() { clientcmd.RecommendedHomeFile = home })
	flagged, env := writeKubeconfig(t, "https://flagged:6443"), writeKubeconfig(t, "https://from-env:6443")
	t.Setenv("KUBECONFIG", env)
	for _, tc := range []struct {
		kubeconfig, want string
	}{
		{flagged, "https://flagged:6443"},
		{"", "https://from-env:6443"},
	} {
		cfg, err := RESTConfig(tc.kubeconfig, "")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != tc.want {
			t.Errorf("--kubeconfig %q: host %s, want %s", tc.kubeconfig, cfg.Host, tc.want)
		}
	}
	if _, err := RESTConfig(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Error("a --kubeconfig that does not exist: no error")
	}
	t.Setenv("KUBECONFIG", "")
	cfg, err := RESTConfig("", "")
	inCluster, inErr := rest.InClusterConfig()
	if (err == nil) != (inErr == nil) || err == nil && cfg.Host != inCluster.Host {
		t.Errorf("nothing but the pod: %v, %v; want the service account's (%v, %v)", cfg, err, inCluster, inErr)
	}
}

// Serve stops without an error when its context ends, and returns the
// error of a server that stopped by itself.
func TestServe(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, &http.Server{Handler: http.NotFoundHandler()}, listener) }()
	if _, err := http.Get("http://" + listener.Addr().String()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("after the context ended: %v, want nil", err)
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if err := Serve(context.Background(), &http.Server{}, closed); err == nil || errors.Is(err, http.ErrServerClosed) {
		t.Errorf("on a closed listener: %v, want its error", err)
	}
}
