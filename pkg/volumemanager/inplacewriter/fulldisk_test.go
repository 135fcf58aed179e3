//go:build linux

package inplacewriter

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// smallTmpfs mounts a tmpfs of size bytes for the test and says true. An
// unprivileged run cannot mount one; it runs the test again in a child
// process that is root of user and mount namespaces of its own, where
// the kernel lets it mount a tmpfs, takes the child's result as the
// test's, and says false: the caller returns at once.
func smallTmpfs(t *testing.T, size int) (string, bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		runAsNamespaceRoot(t)
		return "", false
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Fatalf("mounting a tmpfs as root: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, 0) })
	return dir, true
}

// runAsNamespaceRoot runs t again as root of a new user namespace with a
// mount namespace of its own, and fails t if the child fails. Only a
// kernel without unprivileged user namespaces skips it.
func runAsNamespaceRoot(t *testing.T) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit):
		t.Skipf("no user namespace to mount a tmpfs in, unprivileged (%v): run the test as root", err)
	case err != nil:
		t.Fatalf("the test, run as root of a user namespace, failed: %v\n%s", err, out)
	case !bytes.Contains(out, []byte("--- PASS: "+t.Name())):
		t.Fatalf("the test, run as root of a user namespace, did not pass:\n%s", out)
	}
}

// A full disk fails a larger rewrite before any byte of the file changes:
// the old content stays whole, and the next write, with room again, works.
func TestWriteOnAFullDiskKeepsTheOldContent(t *testing.T) {
	dir, here := smallTmpfs(t, 1<<20)
	if !here {
		return
	}
	old := bytes.Repeat([]byte("o"), 64<<10)
	payload := map[string]atomicwriter.FileProjection{"f": {Data: old, Mode: 0o644}}
	mustWrite(t, dir, payload, nil)
	// Fill the rest of the tmpfs (a file the failing Write never reaches
	// to remove: it stops at the first error).
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	fill := filepath.Join(dir, "fill")
	if err := os.WriteFile(fill, make([]byte, int64(st.Bavail)*st.Bsize-16<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	bigger := bytes.Repeat([]byte("n"), 256<<10)
	_, err := Write(dir, map[string]atomicwriter.FileProjection{"f": {Data: bigger, Mode: 0o644}}, nil, nil)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing on a full disk: %v, want ENOSPC", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f")); !bytes.Equal(got, old) {
		t.Errorf("after the failed write the file holds %d bytes, not the old %d", len(got), len(old))
	}
	os.Remove(fill)
	mustWrite(t, dir, map[string]atomicwriter.FileProjection{"f": {Data: bigger, Mode: 0o644}}, nil)
	if got, _ := os.ReadFile(filepath.Join(dir, "f")); !bytes.Equal(got, bigger) {
		t.Error("the write after the disk freed up did not land")
	}
}
