package volumetree

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// writeVolume lays out a volume as the atomic writer does, with the given
// generation name.
func writeVolume(t *testing.T, dir, generation, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, generation), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, generation, "a"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"..data": generation, "a": "..data/a"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
}

// Two writers' volumes are equal when their files are, whatever their
// generation names; a different byte or mode is a difference.
func TestReadAndDiff(t *testing.T) {
	root := t.TempDir()
	one, two := filepath.Join(root, "one"), filepath.Join(root, "two")
	writeVolume(t, one, "..2026_11_22_02_06_44.3479019008", "x")
	writeVolume(t, two, "..2026_11_23_10_00_01.1", "x")
	a, err := Read(one)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Read(two)
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(a, b, "kubelet", "nodeagent"); d != nil {
		t.Errorf("equal volumes differ: %q", d)
	}
	if e := a["..data"]; e.Kind != Symlink || e.Target != Generation {
		t.Errorf("..data is %v, want a link to %s", e, Generation)
	}
	if err := os.Chmod(filepath.Join(two, "..2026_11_23_10_00_01.1", "a"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ = Read(two)
	d := Diff(a, b, "kubelet", "nodeagent")
	if len(d) != 1 || !strings.Contains(d[0], "..<generation>/a: kubelet has file 0644") || !strings.Contains(d[0], "nodeagent has file 0600") {
		t.Errorf("after a chmod: %q", d)
	}
	if _, err := Read(filepath.Join(root, "missing")); err == nil {
		t.Error("a missing directory read without error")
	}
}

// A tar stream of a node's volume reads as the same tree as the disk.
func TestFromTarMatchesRead(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no tar")
	}
	dir := t.TempDir()
	writeVolume(t, dir, "..2026_11_22_02_06_44.3479019008", "content")
	out, err := exec.Command("tar", "-C", dir, "-cf", "-", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	fromTar, err := FromTar(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	fromDisk, _ := Read(dir)
	if d := Diff(fromDisk, fromTar, "disk", "tar"); d != nil {
		t.Errorf("tar and disk differ: %q", d)
	}
	if _, err := FromTar(bytes.NewReader([]byte("not a tar"))); err == nil {
		t.Error("garbage read as a tar stream")
	}
}
