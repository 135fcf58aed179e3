package core

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPayload(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data:       map[string]string{"a": "A", "b": "B"},
		BinaryData: map[string][]byte{"bin": {0, 1, 2}},
	}
	mode := func(m int32) *int32 { return &m }
	tests := []struct {
		name    string
		source  corev1.ConfigMapVolumeSource
		want    string // "path:mode:data" sorted, or the error
		wantErr bool
	}{
		{"every key, default mode 0644", corev1.ConfigMapVolumeSource{},
			"a:644:A b:644:B bin:644:\x00\x01\x02", false},
		{"defaultMode", corev1.ConfigMapVolumeSource{DefaultMode: mode(0o400)},
			"a:400:A b:400:B bin:400:\x00\x01\x02", false},
		{"items with nested paths and modes", corev1.ConfigMapVolumeSource{DefaultMode: mode(0o440), Items: []corev1.KeyToPath{
			{Key: "a", Path: "dir/sub/a.txt"}, {Key: "bin", Path: "b.bin", Mode: mode(0o755)}}},
			"b.bin:755:\x00\x01\x02 dir/sub/a.txt:440:A", false},
		{"two items with one path: the last wins", corev1.ConfigMapVolumeSource{Items: []corev1.KeyToPath{
			{Key: "a", Path: "same"}, {Key: "b", Path: "same"}}},
			"same:644:B", false},
		{"missing key, optional: skipped", corev1.ConfigMapVolumeSource{Optional: new(true), Items: []corev1.KeyToPath{
			{Key: "nope", Path: "x"}, {Key: "a", Path: "a"}}},
			"a:644:A", false},
		{"missing key, not optional: error", corev1.ConfigMapVolumeSource{Items: []corev1.KeyToPath{{Key: "nope", Path: "x"}}},
			"", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload, err := Payload(&tt.source, cm)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, wantErr %v", err, tt.wantErr)
			}
			var got []string
			for p, f := range payload {
				got = append(got, fmt.Sprintf("%s:%o:%s", p, f.Mode, f.Data))
			}
			sort.Strings(got)
			if strings.Join(got, " ") != tt.want {
				t.Errorf("got %q, want %q", strings.Join(got, " "), tt.want)
			}
		})
	}
}

func TestContentHashDependsOnPathsAndBytes(t *testing.T) {
	base := ContentHash(map[string][]byte{"a": []byte("1")})
	for _, other := range []map[string][]byte{
		{"a": []byte("2")}, {"b": []byte("1")}, {"a": []byte("1"), "b": nil}, {"a1": nil},
	} {
		if ContentHash(other) == base {
			t.Errorf("hash of %v equals hash of a=1", other)
		}
	}
	if ContentHash(map[string][]byte{"a": []byte("1")}) != base {
		t.Error("hash is not deterministic")
	}
}
