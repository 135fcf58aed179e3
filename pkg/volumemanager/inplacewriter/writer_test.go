package inplacewriter

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

func files(kv ...string) map[string]atomicwriter.FileProjection {
	out := map[string]atomicwriter.FileProjection{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = atomicwriter.FileProjection{Data: []byte(kv[i+1]), Mode: 0o644}
	}
	return out
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}

func mustWrite(t *testing.T, dir string, payload map[string]atomicwriter.FileProjection, fsGroup *int64) bool {
	t.Helper()
	changed, err := Write(dir, payload, fsGroup, nil)
	if err != nil {
		t.Fatal(err)
	}
	return changed
}

func TestWriteKeepsTheInodeOfAChangedFile(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, files("a.conf", "one", "dir/b", "bee"), nil)
	before := inode(t, filepath.Join(dir, "a.conf"))
	// A subPath mount binds the inode: hold it open as the mount would.
	held, err := os.Open(filepath.Join(dir, "a.conf"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	for _, content := range []string{"a longer second value", "3"} {
		if !mustWrite(t, dir, files("a.conf", content, "dir/b", "bee"), nil) {
			t.Fatalf("writing %q reported no change", content)
		}
		if after := inode(t, filepath.Join(dir, "a.conf")); after != before {
			t.Errorf("inode changed from %d to %d", before, after)
		}
		got := make([]byte, 64)
		n, _ := held.ReadAt(got, 0)
		if string(got[:n]) != content {
			t.Errorf("the open file reads %q, want %q", got[:n], content)
		}
	}
	if mustWrite(t, dir, files("a.conf", "3", "dir/b", "bee"), nil) {
		t.Error("an unchanged payload reported a change")
	}
}

func TestWriteLeavesExactlyThePayload(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, files("a", "1", "x/y/z", "2", "gone", "3"), nil)
	// A leftover of an interrupted write, and a file where a directory goes.
	if err := os.WriteFile(filepath.Join(dir, tempPrefix+"123"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, dir, files("a", "1", "x/y/z", "2", "gone/now-a-dir", "4"), nil)
	got, err := readAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"a": []byte("1"), "x/y/z": []byte("2"), "gone/now-a-dir": []byte("4")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	mustWrite(t, dir, files("a", "1"), nil)
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Errorf("a directory no path needs is still there: %v", err)
	}
}

// The mount points of volumes mounted inside this one, and what a container
// runtime put there, stay through every write; a payload path on one is
// refused before anything is written.
func TestWriteLeavesMountPointsAlone(t *testing.T) {
	dir := t.TempDir()
	points := []string{"nested", "deep/er/mnt"}
	for _, p := range points {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
		// What the other volume holds, seen through its mount.
		if err := os.WriteFile(filepath.Join(dir, p, "theirs"), []byte("other volume"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, payload := range []map[string]atomicwriter.FileProjection{files("a", "1", "deep/x", "2"), files("a", "3")} {
		if _, err := Write(dir, payload, nil, points); err != nil {
			t.Fatal(err)
		}
		for _, p := range points {
			if data, err := os.ReadFile(filepath.Join(dir, p, "theirs")); err != nil || string(data) != "other volume" {
				t.Errorf("after writing %v: %s/theirs %q, %v; want it untouched", slices.Sorted(maps.Keys(payload)), p, data, err)
			}
		}
	}
	for _, bad := range []string{"nested", "nested/file", "deep/er/mnt/x"} {
		if _, err := Write(dir, files(bad, "x"), nil, points); !errors.Is(err, atomicwriter.ErrInvalidPath) {
			t.Errorf("a payload path %s on a mount point: %v, want ErrInvalidPath", bad, err)
		}
	}
}

func TestWriteModesAndFSGroup(t *testing.T) {
	dir := t.TempDir()
	gid := int64(os.Getgid()) // a group this test may set without privileges
	payload := map[string]atomicwriter.FileProjection{
		"private":   {Data: []byte("p"), Mode: 0o600},
		"sub/plain": {Data: []byte("q"), Mode: 0o400},
	}
	mustWrite(t, dir, payload, &gid)
	for path, want := range map[string]os.FileMode{"private": 0o640, "sub/plain": 0o440} {
		info, err := os.Stat(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (fsGroup adds r--r-----)", path, info.Mode().Perm(), want)
		}
	}
	info, _ := os.Stat(filepath.Join(dir, "sub"))
	if info.Mode()&os.ModeSetgid == 0 {
		t.Errorf("sub: mode %v, want the setgid bit", info.Mode())
	}
	// A mode change alone is a change, made on the same inode.
	before := inode(t, filepath.Join(dir, "private"))
	payload["private"] = atomicwriter.FileProjection{Data: []byte("p"), Mode: 0o644}
	if !mustWrite(t, dir, payload, &gid) {
		t.Error("a mode change reported no change")
	}
	if inode(t, filepath.Join(dir, "private")) != before {
		t.Error("a mode change replaced the file")
	}
}

func TestWriteRefusesBadPathsBeforeTouchingTheDisk(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, files("keep", "1"), nil)
	for _, bad := range []string{"../escape", "/abs", "..data", "a/../../b"} {
		if _, err := Write(dir, files(bad, "x", "keep", "2"), nil, nil); err == nil {
			t.Errorf("path %q: no error", bad)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "keep")); string(got) != "1" {
		t.Errorf("a refused payload changed the volume: keep = %q", got)
	}
}

// readAll returns every file under dir by its path relative to dir.
func readAll(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = data
		return nil
	})
	return out, err
}
