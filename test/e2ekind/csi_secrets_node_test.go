//go:build e2e

package e2ekind

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/ptr"
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
			// A subPath's bind mount of a file is a mount point itself.
			if path == m || strings.HasPrefix(path, m+"/") {
				onTmpfs = true
			}
		}
		if !onTmpfs {
			t.Errorf("%s on %s holds the Secret's bytes and is on no tmpfs", path, node)
		}
	}
	t.Logf("the Secret's bytes on %s: %d files, each on a tmpfs mount", node, len(found))
}

// secretFilesLikeKubelet runs a pod with a secret volume and a projected
// volume (a ConfigMap and the Secret tls) that the kubelet serves, and the
// driver's volumes of the same sources, fsGroup 2000, and holds every file
// of the driver's to the kubelet's: names, modes, group and bytes.
func secretFilesLikeKubelet(t *testing.T, ns, node string) {
	t.Helper()
	mustCreate(t, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"a": "A", "b": "B"}})
	secret := &corev1.SecretVolumeSource{SecretName: "tls", DefaultMode: ptr.To[int32](0o440),
		Items: []corev1.KeyToPath{{Key: corev1.TLSCertKey, Path: "certs/server.crt"}, {Key: corev1.TLSPrivateKeyKey, Path: "server.key", Mode: ptr.To[int32](0o400)}}}
	sources := []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: []corev1.KeyToPath{{Key: "a", Path: "conf/a"}}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}}},
	}
	sourcesJSON, err := json.Marshal(sources)
	if err != nil {
		t.Fatal(err)
	}
	itemsJSON, err := json.Marshal(secret.Items)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "files"}, Spec: corev1.PodSpec{
		NodeName: node, ServiceAccountName: "server", TerminationGracePeriodSeconds: ptr.To[int64](1),
		SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)},
		Volumes: []corev1.Volume{
			{Name: "k-secret", VolumeSource: corev1.VolumeSource{Secret: secret}},
			{Name: "k-projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources, DefaultMode: ptr.To[int32](0o640)}}},
			driverVolume("d-secret", map[string]string{"secret": "tls", "defaultMode": "0440", "items": string(itemsJSON)}),
			driverVolume("d-projected", map[string]string{"sources": string(sourcesJSON), "defaultMode": "0640"}),
		},
		Containers: []corev1.Container{{Name: "app", Image: podImage}},
	}}
	for _, v := range pod.Spec.Volumes {
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/mnt/" + v.Name})
	}
	mustCreate(t, ns, pod)
	running := waitRunning(t, ns, "files")
	checkSameFiles(t, node, volumeDir(kubeletRoot, running.UID, "secret", "k-secret"), filepath.Join(volumeDir(kubeletRoot, running.UID, "csi", "d-secret"), "mount"))
	checkSameFiles(t, node, volumeDir(kubeletRoot, running.UID, "projected", "k-projected"), filepath.Join(volumeDir(kubeletRoot, running.UID, "csi", "d-projected"), "mount"))
}

// secretRefusals: a pod whose service account may not get the Secret its
// volume names stays ContainerCreating with the event that names the
// check to run, and the driver's own account may get no Secret.
func secretRefusals(t *testing.T, ns, node string) {
	t.Helper()
	ctx := context.Background()
	if _, err := clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := csiPod("nobody", node, map[string]map[string]string{"tls": {"secret": "tls"}})
	pod.Spec.ServiceAccountName = "nobody"
	mustCreate(t, ns, pod)
	refusedToPodAndDriver(t, ns, "nobody", "secrets", "tls")
}

// refusedToPodAndDriver: pod of ns, whose service account is "nobody",
// has the event that names the check to run for its account's get of
// resource/name, and the driver's own account may not get it either.
func refusedToPodAndDriver(t *testing.T, ns, pod, resource, name string) {
	t.Helper()
	check := fmt.Sprintf("kubectl auth can-i get %s/%s -n %s --as=system:serviceaccount:%s:nobody", resource, name, ns, ns)
	eventually(t, time.Minute, "the refused pod's event", func() string {
		if events := podEvents(t, ns, pod); !strings.Contains(events, check) {
			return "events: " + events
		}
		return ""
	})
	review, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csiUser, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + csiNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: resource, Name: name}}}, metav1.CreateOptions{})
	if err != nil || review.Status.Allowed {
		t.Errorf("may the driver's own account get %s/%s? %v (%v), want no", resource, name, review.Status.Allowed, err)
	}
}
