package core

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// FuzzConfigMapVolume builds a ConfigMap volume's payload from arbitrary
// keys, items and modes and writes it, and holds the result to the
// kubelet's rules (docs/kubelet-behaviour.md, "The volume on disk"):
// without items every key is a file of the default mode; with items only
// the listed keys, at their paths, with their own mode or the default; a
// listed key that is missing fails the volume unless it is optional. A
// payload the writer refuses writes nothing. Run it with
//
//	go test -run '^$' -fuzz '^FuzzConfigMapVolume$' ./pkg/volumemanager
//
// keys holds one key per line; items one "key<TAB>path<TAB>mode" per line,
// mode -1 for none.
func FuzzConfigMapVolume(f *testing.F) {
	f.Add("a\nb", "", int32(0o644), false)
	f.Add("a\nb", "a\tx/y\t-1\nb\tz\t384", int32(0o440), false)
	f.Add("a", "missing\tm\t-1", int32(0o644), false)
	f.Add("a", "missing\tm\t-1\na\tn\t-1", int32(0o644), true)
	f.Add("a\nb", "a\tsame\t-1\nb\tsame\t-1", int32(0o644), false)
	f.Add("a\nb", "a\tdir\t-1\nb\tdir/file\t-1", int32(0o644), false)
	f.Add("a", "a\t../out\t-1", int32(0o644), false)
	f.Add("a", "a\t..data/x\t-1", int32(0o644), false)
	f.Add("..data", "", int32(0o644), false)
	f.Add("a", "a\t./a\t-1\na\ta\t-1", int32(0o777), false)
	f.Fuzz(func(t *testing.T, keys, items string, defaultMode int32, optional bool) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{}, BinaryData: map[string][]byte{}}
		for i, key := range strings.Split(keys, "\n") {
			if i%2 == 0 {
				cm.Data[key] = key + " value"
			} else {
				cm.BinaryData[key] = []byte(key + " binary\x00")
			}
		}
		source := &corev1.ConfigMapVolumeSource{Optional: &optional}
		mode := defaultMode & 0o777
		source.DefaultMode = &mode
		for line := range strings.Lines(items) {
			fields := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
			if len(fields) != 3 {
				continue
			}
			item := corev1.KeyToPath{Key: fields[0], Path: fields[1]}
			if m, err := strconv.ParseInt(fields[2], 10, 32); err == nil && m >= 0 {
				itemMode := int32(m) & 0o777
				item.Mode = &itemMode
			}
			source.Items = append(source.Items, item)
		}

		payload, err := Payload(source, cm, false)
		if err != nil {
			if len(source.Items) == 0 || optional || CauseOf(err) != CauseKeyMissing {
				t.Fatalf("Payload failed with %v; only a missing listed key of a required ConfigMap may fail it", err)
			}
			return
		}
		want := expectedFiles(source, cm, mode)
		if len(payload) != len(want) {
			t.Fatalf("payload has %d files, want %d: %v", len(payload), len(want), want)
		}
		parent := t.TempDir()
		dir := filepath.Join(parent, "volume")
		if _, err := atomicwriter.Write(dir, payload, atomicwriter.Options{}); err != nil {
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Fatalf("refused (%v), yet %d entries were written", err, len(entries))
			}
			return
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 1 {
			t.Fatalf("%d entries beside the volume directory: a path escaped it", len(entries)-1)
		}
		for p, w := range want {
			full := filepath.Join(dir, filepath.FromSlash(path.Clean(p)))
			got, err := os.ReadFile(full)
			if err != nil || !bytes.Equal(got, w.Data) {
				t.Fatalf("%s: read %q, %v; want %q", p, got, err, w.Data)
			}
			if info, err := os.Stat(full); err != nil || int32(info.Mode().Perm()) != w.Mode {
				t.Fatalf("%s: mode %v, want %o", p, info.Mode().Perm(), w.Mode)
			}
		}
	})
}

// expectedFiles is the kubelet's rule for a ConfigMap volume's files,
// written out independently of configMapPayload.
func expectedFiles(source *corev1.ConfigMapVolumeSource, cm *corev1.ConfigMap, mode int32) map[string]atomicwriter.FileProjection {
	want := map[string]atomicwriter.FileProjection{}
	value := func(key string) ([]byte, bool) {
		if v, ok := cm.Data[key]; ok {
			return []byte(v), true
		}
		v, ok := cm.BinaryData[key]
		return v, ok
	}
	if len(source.Items) == 0 {
		for key := range cm.Data {
			want[key] = atomicwriter.FileProjection{Data: []byte(cm.Data[key]), Mode: mode}
		}
		for key, v := range cm.BinaryData {
			want[key] = atomicwriter.FileProjection{Data: v, Mode: mode}
		}
		return want
	}
	for _, item := range source.Items {
		data, ok := value(item.Key)
		if !ok {
			continue
		}
		m := mode
		if item.Mode != nil {
			m = *item.Mode
		}
		want[item.Path] = atomicwriter.FileProjection{Data: data, Mode: m}
	}
	return want
}
