package atomicwriter

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// listDir gives what os.ReadDir gives, names and types, over listings
// longer than its buffer.
func TestListDirAsReadDir(t *testing.T) {
	dir := t.TempDir()
	for i := range 1500 { // about 40 bytes a record: more than one buffer
		name := filepath.Join(dir, fmt.Sprintf("file-%04d-%s", i, strings.Repeat("x", 10)))
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := listDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Name() != w.Name() || got[i].Type() != w.Type() {
			t.Errorf("entry %d: %s %v, want %s %v", i, got[i].Name(), got[i].Type(), w.Name(), w.Type())
		}
	}
	if _, err := listDir(filepath.Join(dir, "file-0000-xxxxxxxxxx")); err == nil {
		t.Error("listing a file: no error")
	}
}
