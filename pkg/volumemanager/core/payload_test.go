package core

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
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
			payload, err := Payload(&tt.source, cm, false)
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

// getterOf serves cm alone.
type getterOf struct{ cm *corev1.ConfigMap }

func (g getterOf) GetConfigMap(context.Context, string, string) (*corev1.ConfigMap, error) {
	return g.cm, nil
}

// fieldsOf answers a downwardAPI source with one file per item.
type fieldsOf struct{}

func (fieldsOf) DownwardAPIFiles(items []corev1.DownwardAPIVolumeFile, mode int32) (map[string]atomicwriter.FileProjection, error) {
	out := map[string]atomicwriter.FileProjection{}
	for _, item := range items {
		out[item.Path] = atomicwriter.FileProjection{Data: []byte(item.FieldRef.FieldPath), Mode: mode}
	}
	return out, nil
}

// The files' owners as KEP-5936 says, with the gate on: an item's user,
// else the volume's defaultUser (a projected volume's for each of its
// sources); none with the gate off, whatever the volume asks.
func TestPayloadOwners(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"a": "A", "b": "B"}}
	uid := func(u int64) *int64 { return &u }
	items := []corev1.KeyToPath{{Key: "a", Path: "a", User: uid(1000)}, {Key: "b", Path: "b"}}
	volumes := map[string]podrefs.KeptVolume{
		"every key": {ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, DefaultUser: uid(2000)}},
		"items": {ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"},
			DefaultUser: uid(2000), Items: items}},
		"projected": {Projected: &corev1.ProjectedVolumeSource{DefaultUser: uid(2000), Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Items: items}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, User: uid(3000)},
				{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}}}},
	}
	want := map[string]string{
		"every key": "a:2000 b:2000",
		"items":     "a:1000 b:2000",
		"projected": "a:1000 b:2000 name:3000 ns:2000",
	}
	for name, v := range volumes {
		for _, on := range []bool{true, false} {
			payload, _, err := volumePayload(context.Background(), v, &cache.Request{Namespace: "ns", Fields: fieldsOf{}}, getterOf{cm}, on)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for p, f := range payload {
				owner := "-"
				if f.User != nil {
					owner = fmt.Sprint(*f.User)
				}
				got = append(got, p+":"+owner)
			}
			sort.Strings(got)
			expected := want[name]
			if !on {
				expected = regexp.MustCompile(`:\d+`).ReplaceAllString(expected, ":-")
			}
			if strings.Join(got, " ") != expected {
				t.Errorf("%s, gate on %v: owners %s, want %s", name, on, strings.Join(got, " "), expected)
			}
		}
	}
}
