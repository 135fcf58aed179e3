package atomicwriter

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzWrite writes payloads with arbitrary paths, as a ConfigMap's keys
// and items can give them, and holds the writer to its contract: a payload
// it accepts is readable at every path given, byte for byte, and nothing
// is written outside the volume directory; a payload it refuses leaves
// nothing behind. The seed corpus (f.Add below and testdata/fuzz) holds
// the cases the kubelet's rules name. Run it with
//
//	go test -run '^$' -fuzz '^FuzzWrite$' ./pkg/volumemanager/atomicwriter
func FuzzWrite(f *testing.F) {
	for _, seed := range []string{
		"a", "a\nb", "a/b\nc/d/e", "a\na/b", "x\n./x", "..data", "../escape", "/abs", "a//b", "a/./b",
		".hidden", "..", ".", "a/..", "a/../b", "..a/b", "a/..b", "dir/..data", "\x00", "a\\b", "ünïcode/名前",
		strings.Repeat("x", 256), strings.Repeat("d/", 40) + "f",
	} {
		f.Add(seed, []byte("data"))
	}
	f.Fuzz(func(t *testing.T, paths string, data []byte) {
		names := strings.Split(paths, "\n")
		if len(names) > 16 {
			names = names[:16]
		}
		payload := map[string]FileProjection{}
		for i, name := range names {
			payload[name] = FileProjection{Data: append(append([]byte{}, data...), byte(i)), Mode: 0o644}
		}
		parent := t.TempDir()
		dir := filepath.Join(parent, "volume")
		_, err := Write(dir, payload, Options{})
		outside(t, parent)
		if err != nil {
			if gen, _ := currentGeneration(dir); gen != "" {
				t.Fatalf("refused (%v), yet a generation %s was written", err, gen)
			}
			return
		}
		for name, want := range payload {
			got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path.Clean(name))))
			if err != nil || !bytes.Equal(got, want.Data) {
				t.Fatalf("accepted %q, but it reads %q, %v; want %q", name, got, err, want.Data)
			}
		}
		if changed, err := Write(dir, payload, Options{}); changed || err != nil {
			t.Fatalf("the same payload again: changed %v, %v; want nothing written", changed, err)
		}
	})
}

// outside fails the test if anything but the volume directory is in
// parent: a payload path escaped it.
func outside(t *testing.T, parent string) {
	t.Helper()
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "volume" {
			t.Fatalf("%s was written outside the volume directory", e.Name())
		}
	}
	// And every symlink inside points inside.
	filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		target, _ := os.Readlink(p)
		resolved := filepath.Clean(filepath.Join(filepath.Dir(p), target))
		if filepath.IsAbs(target) || !strings.HasPrefix(resolved, filepath.Join(parent, "volume")+"/") {
			t.Fatalf("symlink %s -> %s leaves the volume", p, target)
		}
		return nil
	})
}
