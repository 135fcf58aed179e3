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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
			payload, _, err := volumePayload(context.Background(), v, &cache.Request{Namespace: "ns", Fields: fieldsOf{}}, objectSources{configMaps: getterOf{cm}}, on)
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

// secretsOf serves its Secrets by name; a name it lacks is NotFound.
type secretsOf map[string]*corev1.Secret

func (s secretsOf) GetSecret(_ context.Context, _, name string) (*corev1.Secret, error) {
	if secret, ok := s[name]; ok {
		return secret, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

// Secret volumes and projected volumes' secret sources as the kubelet
// writes them: every key, or the items with their modes; a missing
// optional Secret or key gives nothing, a missing key of a required one
// fails with CauseKeyMissing, a missing Secret with CauseObjectNotFound;
// and without a Secret source (the agent) a projected volume leaves its
// secret sources out.
func TestSecretPayloads(t *testing.T) {
	tls := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls", ResourceVersion: "7"},
		Data: map[string][]byte{"tls.crt": []byte("CERT"), "tls.key": []byte("KEY")}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", ResourceVersion: "3"}, Data: map[string]string{"a": "A"}}
	from := objectSources{configMaps: getterOf{cm}, secrets: secretsOf{"tls": tls}}
	ref := func(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
	mode := func(m int32) *int32 { return &m }
	yes := func() *bool { b := true; return &b }
	projected := &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("cfg")}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: ref("tls"), Items: []corev1.KeyToPath{{Key: "tls.key", Path: "key.pem", Mode: mode(0o400)}}}},
	}}
	for _, c := range []struct {
		name    string
		volume  podrefs.KeptVolume
		from    objectSources
		want    string
		cause   Cause // CauseUnknown: none expected
		version string
	}{
		{name: "every key", volume: podrefs.KeptVolume{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}, from: from,
			want: "tls.crt=CERT:644 tls.key=KEY:644", version: "7"},
		{name: "items", volume: podrefs.KeptVolume{Secret: &corev1.SecretVolumeSource{SecretName: "tls", DefaultMode: mode(0o440),
			Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "certs/tls.crt"}, {Key: "tls.key", Path: "tls.key", Mode: mode(0o400)}}}}, from: from,
			want: "certs/tls.crt=CERT:440 tls.key=KEY:400", version: "7"},
		{name: "missing key", volume: podrefs.KeptVolume{Secret: &corev1.SecretVolumeSource{SecretName: "tls",
			Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}, from: from, cause: CauseKeyMissing},
		{name: "missing optional key", volume: podrefs.KeptVolume{Secret: &corev1.SecretVolumeSource{SecretName: "tls", Optional: yes(),
			Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}}, from: from, want: "", version: "7"},
		{name: "missing Secret", volume: podrefs.KeptVolume{Secret: &corev1.SecretVolumeSource{SecretName: "gone"}}, from: from, cause: CauseObjectNotFound},
		{name: "missing optional Secret", volume: podrefs.KeptVolume{Secret: &corev1.SecretVolumeSource{SecretName: "gone", Optional: yes()}}, from: from},
		{name: "projected", volume: podrefs.KeptVolume{Projected: projected}, from: from,
			want: "a=A:644 key.pem=KEY:400", version: "cfg=3,secret/tls=7"},
		{name: "projected, no Secrets served", volume: podrefs.KeptVolume{Projected: projected}, from: objectSources{configMaps: getterOf{cm}},
			want: "a=A:644", version: "cfg=3"},
	} {
		payload, version, err := volumePayload(context.Background(), c.volume, &cache.Request{Namespace: "ns"}, c.from, false)
		if c.cause != CauseUnknown {
			if got := CauseOf(err); got != c.cause {
				t.Errorf("%s: cause %q (%v), want %q", c.name, got, err, c.cause)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var got []string
		for p, f := range payload {
			got = append(got, fmt.Sprintf("%s=%s:%o", p, f.Data, f.Mode))
		}
		sort.Strings(got)
		if strings.Join(got, " ") != c.want || version != c.version {
			t.Errorf("%s: files %q version %q, want %q version %q", c.name, strings.Join(got, " "), version, c.want, c.version)
		}
	}
}
