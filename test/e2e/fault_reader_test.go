//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The fault suite's ConfigMaps carry payloads that check themselves: every
// value says which generation of the ConfigMap wrote it and how long it
// is, and is padded to that length with a byte that depends on both. A
// reader can then tell, from the bytes alone, a whole file from a
// half-written one, and one generation from a mix of two.

// generationData is generation gen of a ConfigMap with keys values of size
// bytes each.
func generationData(gen, keys, size int) map[string]string {
	data := make(map[string]string, keys)
	for k := range keys {
		key := fmt.Sprintf("key-%02d", k)
		data[key] = generationValue(gen, key, size)
	}
	return data
}

func generationValue(gen int, key string, size int) string {
	header := fmt.Sprintf("gen=%d key=%s len=%d|", gen, key, size)
	if len(header) >= size {
		return header
	}
	return header + strings.Repeat(string(padByte(gen, key)), size-len(header))
}

func padByte(gen int, key string) byte {
	return 'a' + byte((gen*7+len(key)+int(key[len(key)-1]))%26)
}

// parseGeneration returns the generation a value belongs to, and an error
// if it is not a whole value of that generation.
func parseGeneration(data []byte) (int, error) {
	head, rest, ok := bytes.Cut(data, []byte("|"))
	if !ok {
		return 0, fmt.Errorf("no header in %d bytes", len(data))
	}
	var gen, size int
	var key string
	fields := strings.Fields(string(head))
	if len(fields) != 3 {
		return 0, fmt.Errorf("header %q", head)
	}
	for _, f := range fields {
		name, value, _ := strings.Cut(f, "=")
		switch name {
		case "gen":
			gen, _ = strconv.Atoi(value)
		case "key":
			key = value
		case "len":
			size, _ = strconv.Atoi(value)
		}
	}
	if len(data) != size && !(len(head)+1 >= size && len(rest) == 0) {
		return gen, fmt.Errorf("%d bytes of a %d-byte value of generation %d", len(data), size, gen)
	}
	want := padByte(gen, key)
	for i, b := range rest {
		if b != want {
			return gen, fmt.Errorf("byte %d of generation %d's %s is %q, want %q", len(head)+1+i, gen, key, b, want)
		}
	}
	return gen, nil
}

// readStats are what a volumeReader saw.
type readStats struct {
	// Reads counts whole-volume reads: every file of the generation that
	// ..data points at, and every file through its top-level name.
	Reads int64
	// Torn counts files read half-written or corrupted.
	Torn int64
	// Mixed counts volume reads whose files were of two generations.
	Mixed int64
	// Missing counts reads of a top-level name that failed: a file that
	// was there vanished.
	Missing int64
	// SwapRaces counts opens of a top-level name that failed because the
	// writer swapped ..data and removed the generation the open had
	// already resolved, and were opened again: the atomic writer's window
	// (and the kubelet's), not a bad read.
	SwapRaces int64
	// Problems holds the first few, for the test log.
	Problems []string
}

func (s readStats) String() string {
	return fmt.Sprintf("%d volume reads: %d torn files, %d mixed generations, %d missing files (%d opens raced a swap and were retried)",
		s.Reads, s.Torn, s.Mixed, s.Missing, s.SwapRaces)
}

// Bad is the number of reads that a workload would have got wrong.
func (s readStats) Bad() int64 { return s.Torn + s.Mixed + s.Missing }

// Lost says what a workload lost, for the reliability table.
func (s readStats) Lost() string {
	if s.Bad() == 0 {
		return "none"
	}
	return fmt.Sprintf("%d bad reads", s.Bad())
}

// volumeReader reads volume directories in a loop, as a workload would,
// and checks every read.
type volumeReader struct {
	mu       sync.Mutex
	dirs     map[string][]string // volume directory: the top-level names it must keep
	stats    readStats
	reads    atomic.Int64
	cancel   context.CancelFunc
	finished chan struct{}
}

// startReader reads dirs until stopped. A directory with no names given
// is checked for generations only. After each pass over every directory it
// sleeps as long as the pass took: a reader that never rests would take a
// whole core from the apiserver and the agent it watches, and on a small
// machine slow what it tests (a storm's updates, a restart's recovery).
func startReader(dirs map[string][]string) *volumeReader {
	ctx, cancel := context.WithCancel(context.Background())
	r := &volumeReader{dirs: dirs, cancel: cancel, finished: make(chan struct{})}
	go func() {
		defer close(r.finished)
		for ctx.Err() == nil {
			began := time.Now()
			for dir, names := range r.dirs {
				r.readVolume(dir, names)
			}
			time.Sleep(max(time.Since(began), time.Millisecond))
		}
	}()
	return r
}

// stop ends the reads and returns what they saw.
func (r *volumeReader) stop() readStats {
	r.cancel()
	<-r.finished
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Reads = r.reads.Load()
	return r.stats
}

func (r *volumeReader) problem(kind *int64, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*kind++
	if len(r.stats.Problems) < 10 {
		r.stats.Problems = append(r.stats.Problems, fmt.Sprintf(format, args...))
	}
}

// readVolume reads one volume twice over: the generation ..data points
// at, file by file, as one consistent set; and each top-level name, as an
// application opens it.
func (r *volumeReader) readVolume(dir string, names []string) {
	r.reads.Add(1)
	if gen, err := os.Readlink(filepath.Join(dir, "..data")); err == nil {
		r.readGeneration(filepath.Join(dir, gen))
	}
	for _, name := range names {
		data, err := r.readName(dir, name)
		if err != nil {
			r.problem(&r.stats.Missing, "%s/%s: %v (%s)", dir, name, err, volumeState(dir, name))
			continue
		}
		if _, err := parseGeneration(data); err != nil {
			r.problem(&r.stats.Torn, "%s/%s: %v", dir, name, err)
		}
	}
}

// volumeState says, right after a failed read of name, what the volume
// directory holds: whether it exists, where ..data and name point, and
// whether the generation ..data names is there; it tells a volume torn
// down from a generation removed under its ..data or a missing link.
func volumeState(dir, name string) string {
	if _, err := os.Lstat(dir); err != nil {
		return "the volume directory is gone: " + err.Error()
	}
	data, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		return "no ..data: " + err.Error()
	}
	link, linkErr := os.Readlink(filepath.Join(dir, name))
	_, genErr := os.Stat(filepath.Join(dir, data))
	return fmt.Sprintf("..data -> %s (stat: %v), %s -> %s (readlink: %v)", data, genErr, name, link, linkErr)
}

// maxSwapRaces is how many times in a row readName opens a name again
// because ..data moved under the open.
const maxSwapRaces = 10

// readName reads a top-level name as a workload opens it. The open
// resolves <name> to ..data/<name> and ..data to a generation directory;
// if the writer swaps ..data and removes that generation between the two
// steps, the open fails with ENOENT although the file was never missing.
// Such a failure, with ..data changed across it, is opened again; on a
// loaded machine the reader may sleep through one swap after another (a
// storm swaps every 100 ms), so again while ..data keeps changing. A file
// that is really gone fails with ..data unchanged.
func (r *volumeReader) readName(dir, name string) ([]byte, error) {
	before, _ := os.Readlink(filepath.Join(dir, "..data"))
	data, err := os.ReadFile(filepath.Join(dir, name))
	for range maxSwapRaces {
		if !errors.Is(err, fs.ErrNotExist) {
			return data, err
		}
		after, _ := os.Readlink(filepath.Join(dir, "..data"))
		if after == before {
			return nil, err
		}
		r.mu.Lock()
		r.stats.SwapRaces++
		r.mu.Unlock()
		before = after
		data, err = os.ReadFile(filepath.Join(dir, name))
	}
	return data, err
}

// readGeneration checks that every file of a generation directory is
// whole and of one generation. The directory may be removed while it is
// read, once ..data points at a newer one: that is how the writer works,
// and not a fault.
func (r *volumeReader) readGeneration(genDir string) {
	gens, err := generationsIn(genDir, func(p string, err error) { r.problem(&r.stats.Torn, "%s: %v", p, err) })
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.problem(&r.stats.Torn, "%s: %v", genDir, err)
		return
	}
	if len(gens) > 1 {
		r.problem(&r.stats.Mixed, "%s holds generations %v", genDir, gens)
	}
}

// volumeGeneration returns the one generation a volume holds on disk, or
// an error if it holds none or several, or a file is not whole.
func volumeGeneration(dir string) (int, error) {
	var torn error
	gens, err := generationsIn(filepath.Join(dir, "..data")+"/", func(p string, err error) { torn = fmt.Errorf("%s: %w", p, err) })
	switch {
	case err != nil:
		return -1, err
	case torn != nil:
		return -1, torn
	case len(gens) != 1:
		return -1, fmt.Errorf("%s holds generations %v", dir, gens)
	}
	for gen := range gens {
		return gen, nil
	}
	return -1, nil
}

// generationsIn returns the generations of the files under dir, calling
// torn for each file that is not a whole value.
func generationsIn(dir string, torn func(path string, err error)) (map[int]bool, error) {
	gens := map[int]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		gen, err := parseGeneration(data)
		if err != nil {
			torn(p, err)
			return nil
		}
		gens[gen] = true
		return nil
	})
	return gens, err
}

// leftovers lists the writer's entries in a volume directory beyond ..data
// and the one generation it points at: crash or fault debris.
func leftovers(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	current, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		return nil, err
	}
	var extra []string
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, "..") && name != "..data" && name != current {
			extra = append(extra, name)
		}
	}
	return extra, nil
}

// updateData replaces a ConfigMap's data.
func updateData(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	cm, err := clientset.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = data
	if _, err := clientset.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
