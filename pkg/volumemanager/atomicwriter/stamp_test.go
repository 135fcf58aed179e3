package atomicwriter

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// stampedVolume writes a payload with a nested path into a new directory,
// waits until the filesystem's clock has moved past the write (so that any
// change the test makes gets a later ctime than the stamp holds), and
// stamps it as if racyWindow after the write.
func stampedVolume(t *testing.T) (string, Stamp) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("stamps are Linux-only")
	}
	dir := filepath.Join(t.TempDir(), "vol")
	payload := files("a", "one", "sub/b", "two")
	mustWrite(t, dir, payload)
	probe := filepath.Join(dir, "..data", "a")
	before, err := lstatID(probe)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		p := filepath.Join(t.TempDir(), "tick")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if id, _ := lstatID(p); id.ctime().After(before.ctime()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the filesystem's clock did not move in 5 s")
		}
	}
	st, err := StampOf(dir, []string{"a", "sub/b"}, time.Now().Add(racyWindow))
	if err != nil || !st.Intact(dir) {
		t.Fatalf("a fresh stamp is not intact (%v)", err)
	}
	return dir, st
}

// Every kind of change to a volume breaks its stamp: the remount that
// follows compares the files in full and repairs them.
func TestStampSeesEveryChange(t *testing.T) {
	changes := map[string]func(t *testing.T, dir string){
		"a file edited in place, same size": func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "a"), []byte("ONE"), 0o644)
		},
		"a nested file edited": func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "sub", "b"), []byte("TWO"), 0o644)
		},
		"a file's mode changed": func(t *testing.T, dir string) {
			os.Chmod(filepath.Join(dir, "..data", "a"), 0o600)
		},
		"a file deleted and written again": func(t *testing.T, dir string) {
			p := filepath.Join(dir, "..data", "a")
			os.Remove(p)
			os.WriteFile(p, []byte("one"), 0o644)
		},
		"a top-level symlink deleted": func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "a"))
		},
		"a top-level symlink retargeted": func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "a"))
			os.Symlink("..data/sub", filepath.Join(dir, "a"))
		},
		"a stray file in the generation": func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "..data", "stray"), nil, 0o644)
		},
		"..data replaced": func(t *testing.T, dir string) {
			target, _ := os.Readlink(filepath.Join(dir, "..data"))
			os.Remove(filepath.Join(dir, "..data"))
			os.Symlink(target, filepath.Join(dir, "..data"))
		},
		"the volume removed": func(t *testing.T, dir string) {
			os.RemoveAll(dir)
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			dir, st := stampedVolume(t)
			change(t, dir)
			if st.Intact(dir) {
				t.Error("the stamp is still intact after the change")
			}
		})
	}
}

// A stamp taken within racyWindow of the write is never intact: a change
// in the same clock tick as the write could not be told apart.
func TestRacyStampIsNeverIntact(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	mustWrite(t, dir, files("a", "one"))
	st, err := StampOf(dir, []string{"a"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Intact(dir) {
		t.Error("a stamp taken right after the write is intact")
	}
	if (Stamp{}).Intact(dir) {
		t.Error("the zero Stamp is intact")
	}
}
