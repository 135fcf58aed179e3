//go:build e2e

package e2ekind

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// presents says what is wrong with the certificate the pod tls-server of
// ns presents, through a port-forward, to a client that trusts only pair's
// CA: "" where it is pair's.
func presents(t *testing.T, ns string, pair certPair) string {
	t.Helper()
	transport, upgrader, err := spdy.RoundTripperFor(adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	url := clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name("tls-server").SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	forward, err := portforward.New(dialer, []string{"0:8443"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	go func() { failed <- forward.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return fmt.Sprintf("port-forward: %v", err)
	case <-time.After(10 * time.Second):
		return "port-forward not ready within 10 s"
	}
	ports, err := forward.GetPorts()
	if err != nil || len(ports) == 0 {
		return fmt.Sprintf("port-forward ports: %v", err)
	}
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local), &tls.Config{RootCAs: pair.ca, ServerName: serverName, MinVersion: tls.VersionTLS12})
	if err != nil {
		return fmt.Sprintf("a client trusting only the last CA: %v", err)
	}
	defer conn.Close()
	if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(pair.serial) != 0 {
		return fmt.Sprintf("the server presents serial %v, want %v", got, pair.serial)
	}
	return ""
}

// tmpfsMounts lists the node's tmpfs mount points, one a line.
func tmpfsMounts(t *testing.T, node string) string {
	t.Helper()
	out, err := nodeExec(node, "findmnt", "--raw", "--noheadings", "--types", "tmpfs", "--output", "TARGET")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// secretOnlyOnTmpfs searches the node's kubelet and driver directories for
// a piece of secret (from its PEM's first base64 line) and fails where it
// is found anywhere but on a tmpfs mount, or nowhere at all (the search
// would then prove nothing).
func secretOnlyOnTmpfs(t *testing.T, node string, secret []byte) {
	t.Helper()
	lines := bytes.Split(secret, []byte("\n"))
	if len(lines) < 2 || len(lines[1]) < 40 {
		t.Fatalf("the secret has no base64 line to search for")
	}
	marker := string(lines[1][:40])
	out, err := nodeExec(node, "grep", "-rlF", "--", marker, "/var/lib/kubelet", "/var/lib/nodeagent")
	// grep exits 1 where it finds nothing, 2 where it fails.
	if err != nil && !strings.Contains(err.Error(), "exit status 1") {
		t.Fatal(err)
	}
	mounts := strings.Fields(tmpfsMounts(t, node))
	found := strings.Fields(string(out))
	if len(found) == 0 {
		t.Fatalf("the Secret's bytes are nowhere under /var/lib/kubelet on %s, not even in its volume: the search proves nothing", node)
	}
	for _, path := range found {
		onTmpfs := false
		for _, m := range mounts {
			if strings.HasPrefix(path, m+"/") {
				onTmpfs = true
			}
		}
		if !onTmpfs {
			t.Errorf("%s on %s holds the Secret's bytes and is on no tmpfs", path, node)
		}
	}
	t.Logf("the Secret's bytes on %s: %d files, each on a tmpfs mount", node, len(found))
}
