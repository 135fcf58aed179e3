package csidriver

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// secretCert is the value the tests look for on disk: it must be found in
// the volumes' tmpfs and nowhere else.
const secretCert = "-----BEGIN CERTIFICATE----- test-only-bytes"

func tlsSecret(cert string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte(cert), "tls.key": []byte("key")}}
}

// newSecretsHarness is a driver in the Secrets mode, reading as the pods,
// on this node's real mounts: it needs root (CAP_SYS_ADMIN) to mount.
func newSecretsHarness(t *testing.T, authorize *authorizer, objects ...runtime.Object) *harness {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the Secrets mode mounts a tmpfs per volume: run as root")
	}
	return newHarnessMode(t, nil, authorize, true, objects...)
}

func isTmpfs(t *testing.T, dir string) bool {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return st.Type == unix.TMPFS_MAGIC
}

// A Secret volume and a projected volume of a ConfigMap and a Secret, read
// as the pod, each on a tmpfs of its own: files and modes as asked, an
// update within a watch event, no Secret byte in the driver's records, and
// nothing left after the unpublish.
func TestSecretVolumesOnTmpfs(t *testing.T) {
	t.Parallel()
	authorize := newAuthorizer()
	authorize.allow("t1", "secret/tls", "app")
	h := newSecretsHarness(t, authorize, tlsSecret(secretCert), configMap("app", map[string]string{"k": "1"}))
	expires := time.Now().Add(time.Hour)
	secret := withToken(h.newVolume("uid-1", "tls", map[string]string{"secret": "tls", "defaultMode": "0400",
		"items": `[{"key":"tls.crt","path":"tls.crt"}]`}), "t1", expires)
	projected := withToken(h.newVolume("uid-1", "both", map[string]string{
		"sources": `[{"configMap":{"name":"app"}},{"secret":{"name":"tls","items":[{"key":"tls.key","path":"key.pem"}]}}]`}), "t1", expires)
	h.mustPublish(secret)
	h.mustPublish(projected)
	if got := h.read(secret, "tls.crt"); got != secretCert {
		t.Errorf("tls.crt holds %q", got)
	}
	if info, err := os.Stat(filepath.Join(secret.target, "tls.crt")); err != nil || info.Mode().Perm() != 0o400 {
		t.Errorf("tls.crt: %v, %v; want mode 0400", info, err)
	}
	if h.read(secret, "tls.key") != "" || h.read(projected, "k") != "1" || h.read(projected, "key.pem") != "key" {
		t.Errorf("files: tls.key %q, k %q, key.pem %q; want none, 1, key", h.read(secret, "tls.key"), h.read(projected, "k"), h.read(projected, "key.pem"))
	}
	for _, v := range []volume{secret, projected} {
		if !isTmpfs(t, v.target) {
			t.Errorf("%s is not on a tmpfs", v.target)
		}
	}
	if _, err := h.client.CoreV1().Secrets(testNamespace).Update(context.Background(), tlsSecret("rotated"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the rotated certificate in the volume", func() bool { return h.read(secret, "tls.crt") == "rotated" })
	assertNoBytesUnder(t, h.stateDir, secretCert, "rotated")
	for _, v := range []volume{secret, projected} {
		if err := h.unpublish(v); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(v.target); !os.IsNotExist(err) {
			t.Errorf("%s after the unpublish: %v, want it gone (and unmounted)", v.target, err)
		}
	}
}

// assertNoBytesUnder fails if a file under dir holds any of values.
func assertNoBytesUnder(t *testing.T, dir string, values ...string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		for _, v := range values {
			if bytes.Contains(data, []byte(v)) {
				t.Errorf("%s holds a Secret's bytes", path)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A volume that reads a Secret is refused outside the Secrets mode, and
// a pod whose account may not get the Secret is told what to check.
func TestSecretVolumesRefused(t *testing.T) {
	t.Parallel()
	authorize := newAuthorizer()
	authorize.allow("t1", "app")
	expires := time.Now().Add(time.Hour)
	plain := newHarnessAs(t, authorize, tlsSecret(secretCert))
	v := withToken(plain.newVolume("uid-1", "tls", map[string]string{"secret": "tls"}), "t1", expires)
	wantCode(t, plain.publish(v), codes.FailedPrecondition, "--secrets")

	h := newSecretsHarness(t, authorize, tlsSecret(secretCert))
	v = withToken(h.newVolume("uid-1", "tls", map[string]string{"secret": "tls"}), "t1", expires)
	wantCode(t, h.publish(v), codes.PermissionDenied, "kubectl auth can-i get secrets/tls")
	if _, err := os.Stat(v.target); !os.IsNotExist(err) {
		t.Errorf("the refused volume's target: %v, want nothing left", err)
	}
}

// A driver restarted keeps a Secret volume's tmpfs and files; its watch
// waits for a token until the kubelet's next publish of the volume, which
// brings the update made meanwhile; the unpublish leaves nothing.
func TestSecretVolumeAcrossARestart(t *testing.T) {
	t.Parallel()
	authorize := newAuthorizer()
	authorize.allow("t1", "secret/tls")
	h := newSecretsHarness(t, authorize, tlsSecret(secretCert))
	v := withToken(h.newVolume("uid-1", "tls", map[string]string{"secret": "tls"}), "t1", time.Now().Add(time.Hour))
	h.mustPublish(v)
	h.halt()
	if _, err := h.client.CoreV1().Secrets(testNamespace).Update(context.Background(), tlsSecret("rotated"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.start()
	if got := h.read(v, "tls.crt"); got != secretCert || !isTmpfs(t, v.target) {
		t.Fatalf("after the restart: tls.crt %q, on a tmpfs %v; want the content it had, on its tmpfs", got, isTmpfs(t, v.target))
	}
	h.mustPublish(v)
	h.eventually("the update made while the driver was down", func() bool { return h.read(v, "tls.crt") == "rotated" })
	if err := h.unpublish(v); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(v.target); !os.IsNotExist(err) {
		t.Errorf("%s after the unpublish: %v, want it gone", v.target, err)
	}
}

// A Secret volume whose publish fails after its tmpfs is mounted (its
// Secret does not exist) leaves neither the mount nor the target behind.
func TestFailedSecretPublishLeavesNoMount(t *testing.T) {
	t.Parallel()
	authorize := newAuthorizer()
	authorize.allow("t1", "secret/absent")
	h := newSecretsHarness(t, authorize)
	v := withToken(h.newVolume("uid-1", "tls", map[string]string{"secret": "absent"}), "t1", time.Now().Add(time.Hour))
	wantCode(t, h.publish(v), codes.NotFound, "absent")
	if _, err := os.Stat(v.target); !os.IsNotExist(err) {
		t.Errorf("%s after the failed publish: %v, want it gone (and unmounted)", v.target, err)
	}
}
