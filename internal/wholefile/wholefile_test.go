package wholefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write replaces the file with the data and mode asked, and leaves no
// temporary file; into a directory that does not exist it fails, leaving
// nothing.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	data, _ := os.ReadFile(path)
	if err != nil || string(data) != "new" || info.Mode().Perm() != 0o600 {
		t.Errorf("the file holds %q with mode %v (%v), want new, 0600", data, info.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			t.Errorf("a temporary file is left: %s", e.Name())
		}
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0o600); err == nil {
		t.Error("a write into a missing directory succeeded")
	}
}
