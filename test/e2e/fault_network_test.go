//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
)

// faultProxy is a toxiproxy proxy, in this process, between an agent and
// the apiserver.
type faultProxy struct {
	proxy       *toxiproxy.Proxy
	connections *connectionCounter
}

// startFaultProxy proxies a loopback port to the apiserver and returns it
// with a kubeconfig of node's identity that goes through it.
func startFaultProxy(t *testing.T, node string) (*faultProxy, string) {
	t.Helper()
	upstream, err := url.Parse(cp.APIServerURL)
	if err != nil {
		t.Fatal(err)
	}
	connections := &connectionCounter{}
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.New(connections))
	proxy := toxiproxy.NewProxy(server, "apiserver-"+node, fmt.Sprintf("127.0.0.1:%d", freePort(t)), upstream.Host)
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	cfg, err := cp.NodeRESTConfig(node)
	if err != nil {
		t.Fatal(err)
	}
	// The apiserver's certificate names 127.0.0.1, which the proxy's
	// address is too.
	cfg.Host = "https://" + proxy.Listen
	path := filepath.Join(t.TempDir(), node+"-proxied.kubeconfig")
	if err := controlplane.WriteKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	return &faultProxy{proxy: proxy, connections: connections}, path
}

// addToxic adds a toxic, given as toxiproxy's JSON (type, stream,
// attributes), and returns what removes it.
func (p *faultProxy) addToxic(t *testing.T, toxic string) (remove func()) {
	t.Helper()
	wrapper, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(toxic))
	if err != nil {
		t.Fatalf("adding toxic %s: %v", toxic, err)
	}
	return func() {
		if err := p.proxy.Toxics.RemoveToxic(context.Background(), wrapper.Name); err != nil {
			t.Errorf("removing toxic %s: %v", wrapper.Name, err)
		}
	}
}

// cutOff closes the proxy's listener and every connection through it, as
// a network partition that resets connections would; the returned func
// reconnects.
func (p *faultProxy) cutOff(t *testing.T) (restore func()) {
	t.Helper()
	p.proxy.Stop()
	return func() {
		if err := p.proxy.Start(); err != nil {
			t.Fatalf("restarting the proxy: %v", err)
		}
	}
}

// compactEtcd compacts etcd's history up to its current revision, through
// etcd's JSON gateway, so that no watch can resume from before it.
func compactEtcd(t *testing.T) int64 {
	t.Helper()
	post := func(path string, body any) map[string]any {
		data, _ := json.Marshal(body)
		resp, err := http.Post(cp.EtcdURL+path, "application/json", bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("etcd %s: %s: %s", path, resp.Status, out)
		}
		var decoded map[string]any
		if err := json.Unmarshal(out, &decoded); err != nil {
			t.Fatalf("etcd %s: %v: %s", path, err, out)
		}
		return decoded
	}
	// Any range answers with the current revision in its header.
	header, _ := post("/v3/kv/range", map[string]any{"key": "AA=="})["header"].(map[string]any)
	var revision int64
	fmt.Sscan(fmt.Sprint(header["revision"]), &revision)
	if revision == 0 {
		t.Fatalf("etcd's current revision: %v", header)
	}
	post("/v3/kv/compaction", map[string]any{"revision": revision, "physical": true})
	return revision
}

// connectionCounter counts the connections the proxy accepts, from its log.
type connectionCounter struct{ n atomic.Int64 }

func (c *connectionCounter) Write(p []byte) (int, error) {
	c.n.Add(int64(bytes.Count(p, []byte("Accepted client"))))
	return len(p), nil
}
