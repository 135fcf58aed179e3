package atomicwriter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func files(kv ...string) map[string]FileProjection {
	m := map[string]FileProjection{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = FileProjection{Data: []byte(kv[i+1]), Mode: 0o644}
	}
	return m
}

// visibleEntries returns "name" for entries and "name -> target" for symlinks.
func visibleEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") && name != dataDirName && name != newDataDirName {
			name = "..<generation>"
		}
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			if strings.HasPrefix(target, "..2") {
				target = "..<generation>"
			}
			name += " -> " + target
		} else if e.IsDir() && !strings.HasPrefix(name, "..") {
			name += "/"
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func readVisible(t *testing.T, dir, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func mustWrite(t *testing.T, dir string, payload map[string]FileProjection) bool {
	t.Helper()
	changed, err := Write(dir, payload, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return changed
}

func TestLayoutAndUpdates(t *testing.T) {
	dir := t.TempDir()
	if !mustWrite(t, dir, files("a", "1", "sub/b", "2")) {
		t.Fatal("first write reported no change")
	}
	want := []string{"..<generation>", "..data -> ..<generation>", "a -> ..data/a", "sub -> ..data/sub"}
	if got := visibleEntries(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("layout: got %v, want %v", got, want)
	}
	if readVisible(t, dir, "a") != "1" || readVisible(t, dir, "sub/b") != "2" {
		t.Error("wrong content")
	}
	gen1, _ := os.Readlink(filepath.Join(dir, dataDirName))

	// Same bytes: nothing happens, even with another mode.
	same := files("a", "1", "sub/b", "2")
	same["a"] = FileProjection{Data: []byte("1"), Mode: 0o600}
	if mustWrite(t, dir, same) {
		t.Error("a mode-only change caused a write")
	}
	if gen, _ := os.Readlink(filepath.Join(dir, dataDirName)); gen != gen1 {
		t.Error("a no-op write switched generations")
	}

	// New content, a key gone: one switch, old generation and entry gone.
	if !mustWrite(t, dir, files("a", "changed")) {
		t.Fatal("update reported no change")
	}
	want = []string{"..<generation>", "..data -> ..<generation>", "a -> ..data/a"}
	if got := visibleEntries(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after update: got %v, want %v", got, want)
	}
	if readVisible(t, dir, "a") != "changed" {
		t.Error("update not visible")
	}

	// An empty payload leaves an empty volume.
	mustWrite(t, dir, map[string]FileProjection{})
	want = []string{"..<generation>", "..data -> ..<generation>"}
	if got := visibleEntries(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("empty payload: got %v, want %v", got, want)
	}
}

// Differs skips the comparison: the same bytes get a new generation, which
// is the only cost of a wrong Differs.
func TestDiffersWritesWithoutComparing(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, files("a", "1"))
	gen1, _ := os.Readlink(filepath.Join(dir, dataDirName))
	changed, err := Write(dir, files("a", "1"), Options{Differs: true})
	if err != nil || !changed {
		t.Fatalf("a Write with Differs of the same bytes: changed %v, %v; want a new generation", changed, err)
	}
	if gen, _ := os.Readlink(filepath.Join(dir, dataDirName)); gen == gen1 {
		t.Error("..data still points at the first generation")
	}
	want := []string{"..<generation>", "..data -> ..<generation>", "a -> ..data/a"}
	if got := visibleEntries(t, dir); fmt.Sprint(got) != fmt.Sprint(want) || readVisible(t, dir, "a") != "1" {
		t.Errorf("got %v holding %q, want %v holding \"1\"", got, readVisible(t, dir, "a"), want)
	}
}

func TestModes(t *testing.T) {
	dir := t.TempDir()
	// 0666 and 0777 have the bits a umask of 022 clears at the create.
	mustWrite(t, dir, map[string]FileProjection{
		"secret":   {Data: []byte("x"), Mode: 0o400},
		"script":   {Data: []byte("y"), Mode: 0o755},
		"shared":   {Data: []byte("z"), Mode: 0o666},
		"everyone": {Data: []byte("w"), Mode: 0o777},
	})
	for name, want := range map[string]os.FileMode{"secret": 0o400, "script": 0o755, "shared": 0o666, "everyone": 0o777, dataDirName: 0o755} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", name, got, want)
		}
	}
}

func TestInvalidPayloadsTouchNothing(t *testing.T) {
	tests := []struct {
		name    string
		payload map[string]FileProjection
		wantErr string
	}{
		{"empty path", files("", "x"), "must not be empty"},
		{"absolute", files("/etc/passwd", "x"), "must be relative"},
		{"dot-dot element", files("a/../../b", "x"), "must not contain '..'"},
		{"reserved prefix", files("..data", "x"), "must not start with '..'"},
		{"reserved prefix hidden", files("..foo/bar", "x"), "must not start with '..'"},
		{"reserved prefix once cleaned", files("./..0", "x"), "belongs to the writer"},
		{"the writer's link once cleaned", files("./..data", "x"), "belongs to the writer"},
		{"element too long", files(strings.Repeat("e", 256), "x"), "longer than 255"},
		{"path too long", files(strings.Repeat("d/", 2049), "x"), "longer than 4096"},
		{"the volume itself", files(".", "x"), "volume directory itself"},
		{"two names for one file", files("x", "1", "./x", "2"), "both name the file"},
		{"file and directory", files("a", "1", "a/b", "2"), "both a file and a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mustWrite(t, dir, files("keep", "old"))
			before := visibleEntries(t, dir)
			_, err := Write(dir, tt.payload, Options{})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
			}
			if got := visibleEntries(t, dir); fmt.Sprint(got) != fmt.Sprint(before) || readVisible(t, dir, "keep") != "old" {
				t.Errorf("an invalid payload changed the volume: %v", got)
			}
		})
	}
}

// crashLeftovers are what a crash or a careless hand leaves in a volume
// written with files("a", "1").
var crashLeftovers = []struct {
	name  string
	crash func(t *testing.T, dir string)
}{
	{"stale ..data_tmp", func(t *testing.T, dir string) {
		os.Symlink("..2020_01_01_00_00_00.1", filepath.Join(dir, newDataDirName))
	}},
	{"half-written generation", func(t *testing.T, dir string) {
		half := filepath.Join(dir, "..2020_01_01_00_00_00.2")
		os.MkdirAll(half, 0o755)
		os.WriteFile(filepath.Join(half, "a"), []byte("partial"), 0o644)
	}},
	{"dangling top-level symlink", func(t *testing.T, dir string) {
		os.Symlink(filepath.Join(dataDirName, "gone"), filepath.Join(dir, "gone"))
	}},
	{"missing top-level symlink", func(t *testing.T, dir string) {
		os.Remove(filepath.Join(dir, "a"))
	}},
	{"..data replaced by a directory", func(t *testing.T, dir string) {
		os.Remove(filepath.Join(dir, dataDirName))
		os.MkdirAll(filepath.Join(dir, dataDirName), 0o755)
		os.WriteFile(filepath.Join(dir, dataDirName, "a"), []byte("stray"), 0o644)
	}},
	{"..data pointing at nothing", func(t *testing.T, dir string) {
		os.Remove(filepath.Join(dir, dataDirName))
		os.Symlink("..2020_01_01_00_00_00.3", filepath.Join(dir, dataDirName))
	}},
	{"half-written nested generation", func(t *testing.T, dir string) {
		half := filepath.Join(dir, "..2020_01_01_00_00_00.4", "sub", "deeper")
		os.MkdirAll(half, 0o755)
		os.WriteFile(filepath.Join(half, "b"), []byte("partial"), 0o644)
		os.Symlink("b", filepath.Join(half, "link"))
	}},
	{"a file of the generation replaced by a symlink to the same bytes", func(t *testing.T, dir string) {
		same := filepath.Join(t.TempDir(), "same")
		os.WriteFile(same, []byte("1"), 0o644)
		os.Remove(filepath.Join(dir, dataDirName, "a"))
		os.Symlink(same, filepath.Join(dir, dataDirName, "a"))
	}},
	{"a stray file in the generation", func(t *testing.T, dir string) {
		os.WriteFile(filepath.Join(dir, dataDirName, "stray"), []byte("x"), 0o644)
	}},
	{"a file of the generation edited", func(t *testing.T, dir string) {
		os.WriteFile(filepath.Join(dir, dataDirName, "a"), []byte("2"), 0o644)
	}},
}

func TestRepairsCrashLeftovers(t *testing.T) {
	for _, tt := range crashLeftovers {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mustWrite(t, dir, files("a", "1"))
			tt.crash(t, dir)
			mustWrite(t, dir, files("a", "1"))
			want := []string{"..<generation>", "..data -> ..<generation>", "a -> ..data/a"}
			if got := visibleEntries(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("after repair: got %v, want %v", got, want)
			}
			if readVisible(t, dir, "a") != "1" {
				t.Error("content lost")
			}
			entries, err := os.ReadDir(filepath.Join(dir, dataDirName))
			if err != nil || len(entries) != 1 || entries[0].Name() != "a" || !entries[0].Type().IsRegular() {
				t.Errorf("the generation holds %v (%v), want the regular file a alone", entries, err)
			}
		})
	}
}

func TestFailedWriteKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, files("a", "old", "b", "old"))
	// Fail the second file written, as a full disk would midway through.
	payload := files("a", "new", "b", "new")
	payload["c/d"] = FileProjection{Data: []byte("x"), Mode: 0o644}
	origWrite := writeFileHook
	defer func() { writeFileHook = origWrite }()
	var calls atomic.Int32
	writeFileHook = func(path string, data []byte, mode os.FileMode) error {
		if calls.Add(1) == 2 {
			return errors.New("no space left on device")
		}
		return origWrite(path, data, mode)
	}
	if _, err := Write(dir, payload, Options{}); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("got %v, want the write error", err)
	}
	if readVisible(t, dir, "a") != "old" || readVisible(t, dir, "b") != "old" {
		t.Error("old content not intact after a failed write")
	}
	want := []string{"..<generation>", "..data -> ..<generation>", "a -> ..data/a", "b -> ..data/b"}
	if got := visibleEntries(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a failed write left %v, want %v", got, want)
	}
}

// Readers see whole generations: a file's content always matches the other
// file of the same generation.
func TestReadersNeverSeeAMix(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, files("a", "0", "b", "0"))
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mixed atomic.Int32
	wg.Go(func() {
		for !stop.Load() {
			// Read both through one resolved generation, as an application
			// that opens ..data once would.
			gen, err := os.Readlink(filepath.Join(dir, dataDirName))
			if err != nil {
				continue
			}
			a, errA := os.ReadFile(filepath.Join(dir, gen, "a"))
			b, errB := os.ReadFile(filepath.Join(dir, gen, "b"))
			if errA == nil && errB == nil && string(a) != string(b) {
				mixed.Add(1)
			}
		}
	})
	for i := 1; i <= 200; i++ {
		v := fmt.Sprint(i)
		mustWrite(t, dir, files("a", v, "b", v))
	}
	stop.Store(true)
	wg.Wait()
	if mixed.Load() != 0 {
		t.Errorf("a reader saw a and b from different generations %d times", mixed.Load())
	}
}

// A real directory in the volume (the mount point of a volume that a
// container mounts inside this one) is not the writer's: it survives every
// write, even one whose payload has a file of the same name.
func TestKeepsEntriesThatAreNotItsOwn(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, files("a", "1"))
	if err := os.MkdirAll(filepath.Join(dir, "nested", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/elsewhere", filepath.Join(dir, "foreign")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, dir, files("a", "2", "nested", "payload"))
	mustWrite(t, dir, files("b", "3"))
	want := []string{"..<generation>", "..data -> ..<generation>", "b -> ..data/b", "foreign -> /elsewhere", "nested/"}
	if got := visibleEntries(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "nested", "deeper")); err != nil {
		t.Errorf("the nested mount point's content is gone: %v", err)
	}
}

// SetPerms sees the new generation complete and not yet visible; an error
// from it leaves the old generation in place.
func TestSetPermsRunsBeforeTheSwitch(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, dir, files("a", "old"))
	var sawNew, visibleOld bool
	_, err := Write(dir, files("a", "new"), Options{SetPerms: func() error {
		gens, _ := filepath.Glob(filepath.Join(dir, "..20*"))
		for _, g := range gens {
			if data, _ := os.ReadFile(filepath.Join(g, "a")); string(data) == "new" {
				sawNew = true
			}
		}
		visibleOld = readVisible(t, dir, "a") == "old"
		return fmt.Errorf("chown refused")
	}})
	if err == nil || !strings.Contains(err.Error(), "chown refused") {
		t.Fatalf("want the setPerms error, got %v", err)
	}
	if !sawNew || !visibleOld {
		t.Errorf("setPerms saw the new generation: %v, old still visible: %v; want both", sawNew, visibleOld)
	}
	if got := readVisible(t, dir, "a"); got != "old" {
		t.Errorf("after a failed setPerms: got %q, want the old content", got)
	}
	want := []string{"..<generation>", "..data -> ..<generation>", "a -> ..data/a"}
	if got := visibleEntries(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v (no partial generation left)", got, want)
	}
}

// RemoveOwn removes a volume the writer wrote, and nothing it did not.
func TestRemoveOwn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "v")
	if _, err := Write(dir, map[string]FileProjection{"a": {Data: []byte("1"), Mode: 0o644}, "d/b": {Data: []byte("2"), Mode: 0o644}}, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "theirs"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RemoveOwn(dir); err == nil || !strings.Contains(err.Error(), "theirs") {
		t.Fatalf("RemoveOwn with a file of somebody else's: %v, want an error naming it", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != "theirs" {
		t.Fatalf("left %v, want theirs alone", entries)
	}
	if err := os.Remove(filepath.Join(dir, "theirs")); err != nil {
		t.Fatal(err)
	}
	if err := RemoveOwn(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory is still there: %v", err)
	}
	if err := RemoveOwn(dir); err != nil {
		t.Errorf("RemoveOwn of a directory that is gone: %v", err)
	}
}
