package atomicwriter

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"k8s.io/utils/ptr"
)

// ownerOf is the owner UID of path itself (a symlink's, not its target's).
func ownerOf(t *testing.T, path string) int {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(info.Sys().(*syscall.Stat_t).Uid)
}

// A file with a User is that user's, and so is the top-level symlink made
// for it (for a directory, its first file's by path); a file without one
// and the directories stay the writer's; a change of owner alone writes
// nothing, and an existing symlink keeps its owner, as in the kubelet.
func TestWriteSetsTheFilesOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setting another user as a file's owner needs root")
	}
	dir := t.TempDir()
	payload := map[string]FileProjection{
		"app.conf":   {Data: []byte("a"), Mode: 0o400, User: ptr.To[int64](1000)},
		"plain":      {Data: []byte("b"), Mode: 0o644},
		"etc/b.conf": {Data: []byte("c"), Mode: 0o400, User: ptr.To[int64](2000)},
		"etc/a.conf": {Data: []byte("d"), Mode: 0o400, User: ptr.To[int64](3000)},
	}
	if _, err := Write(dir, payload, Options{}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"..data/app.conf": 1000, "app.conf": 1000, "..data/plain": 0, "plain": 0,
		"..data/etc/b.conf": 2000, "..data/etc/a.conf": 3000, "etc": 3000, "..data/etc": 0, "..data": 0,
	} {
		if got := ownerOf(t, filepath.Join(dir, path)); got != want {
			t.Errorf("%s is owned by %d, want %d", path, got, want)
		}
	}
	payload["app.conf"] = FileProjection{Data: []byte("a"), Mode: 0o400, User: ptr.To[int64](4000)}
	if changed, err := Write(dir, payload, Options{}); err != nil || changed {
		t.Errorf("a change of owner alone: changed %v, err %v; want nothing written", changed, err)
	}
	payload["app.conf"] = FileProjection{Data: []byte("new"), Mode: 0o400, User: ptr.To[int64](4000)}
	if changed, err := Write(dir, payload, Options{}); err != nil || !changed {
		t.Fatalf("a change of content: changed %v, err %v", changed, err)
	}
	if got, link := ownerOf(t, filepath.Join(dir, "..data/app.conf")), ownerOf(t, filepath.Join(dir, "app.conf")); got != 4000 || link != 1000 {
		t.Errorf("after the update the file is %d's (want 4000) and its symlink %d's (want 1000, kept)", got, link)
	}
}
