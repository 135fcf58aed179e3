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

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// smallTmpfs mounts a tmpfs of size bytes for the test, or skips it where
// mounts are not allowed.
func smallTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mounting a tmpfs failed (%v: %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	return dir
}

// A full disk fails a larger rewrite before any byte of the file changes:
// the old content stays whole, and the next write, with room again, works.
func TestWriteOnAFullDiskKeepsTheOldContent(t *testing.T) {
	dir := smallTmpfs(t, 1<<20)
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
	_, err := Write(dir, map[string]atomicwriter.FileProjection{"f": {Data: bigger, Mode: 0o644}}, nil)
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
