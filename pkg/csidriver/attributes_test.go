package csidriver

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

// podAttrs are the attributes the kubelet adds with podInfoOnMount.
func podAttrs(extra map[string]string) map[string]string {
	attrs := map[string]string{
		attrPodName: "web-0", attrPodNamespace: "shop", attrPodUID: "uid-1",
		attrServiceAccount: "default", attrEphemeral: "true",
	}
	maps.Copy(attrs, extra)
	return attrs
}

func TestParseAttributes(t *testing.T) {
	t.Parallel()
	mode := func(m int32) *int32 { return &m }
	yes := true
	tests := []struct {
		name  string
		attrs map[string]string
		want  volumeSpec
	}{{
		name:  "only the ConfigMap",
		attrs: podAttrs(map[string]string{podrefs.AttrConfigMap: "app-config"}),
		want: volumeSpec{Source: podrefs.DriverSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, DefaultMode: mode(0o644)}}},
	}, {
		name: "every attribute",
		attrs: podAttrs(map[string]string{podrefs.AttrConfigMap: "app-config", podrefs.AttrOptional: "true", podrefs.AttrDefaultMode: "0440",
			podrefs.AttrDefaultUser: "1000", podrefs.AttrItems: `[{"key":"a","path":"dir/a.conf","mode":256,"user":2000}]`,
			podrefs.AttrUpdates: "inPlace", "csi.storage.k8s.io/a.future.key": "ignored"}),
		want: volumeSpec{Layout: cache.LayoutInPlace, Source: podrefs.DriverSource{InPlace: true, ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Optional: &yes, DefaultMode: mode(0o440),
			DefaultUser: ptr.To[int64](1000), Items: []corev1.KeyToPath{{Key: "a", Path: "dir/a.conf", Mode: mode(0o400), User: ptr.To[int64](2000)}}}}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAttributes(tt.attrs)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Pod = podInfo{Namespace: "shop", Name: "web-0", UID: "uid-1", ServiceAccount: "default"}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseAttributesRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		attrs map[string]string
		// want is a part of the message, which the pod's events show.
		want string
	}{
		{"no ConfigMap", podAttrs(nil), `attribute "configMap" is required`},
		{"another namespace", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", "namespace": "kube-system"}), `"namespace" is not supported`},
		{"a name with a slash", podAttrs(map[string]string{podrefs.AttrConfigMap: "kube-system/c"}), "a ConfigMap name has no slash"},
		{"a name that is not one", podAttrs(map[string]string{podrefs.AttrConfigMap: "Not_A_Name"}), "lowercase RFC 1123 subdomain"},
		{"an unknown attribute", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", "configmap": "c"}), `unknown attribute "configmap"`},
		{"bad JSON in items", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrItems: `[{"key":"a",`}), "is not a JSON list"},
		{"an unknown field in items", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrItems: `[{"key":"a","path":"a","mod":1}]`}), `unknown field "mod"`},
		{"a path with ..", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrItems: `[{"key":"a","path":"../etc/passwd"}]`}), "must not contain '..'"},
		{"an absolute path", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrItems: `[{"key":"a","path":"/etc/passwd"}]`}), "must be relative"},
		{"a path the writer owns", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrItems: `[{"key":"a","path":"..data"}]`}), "must not start with '..'"},
		{"two items on one file", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrItems: `[{"key":"a","path":"x"},{"key":"b","path":"x/y"}]`}), "both a file and a directory"},
		{"a bad item mode", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrItems: `[{"key":"a","path":"a","mode":4096}]`}), "is not a file mode"},
		{"a bad key", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrItems: `[{"key":"a/b","path":"a"}]`}), `key "a/b"`},
		{"a bad defaultMode", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrDefaultMode: "0999"}), "want an octal mode"},
		{"a bad defaultUser", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrDefaultUser: "-1"}), "want a user ID from 0 to 2147483647"},
		{"a bad item user", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrItems: `[{"key":"a","path":"a","user":4294967296}]`}), "is not a user ID"},
		{"a bad optional", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrOptional: "maybe"}), `want "true" or "false"`},
		{"a bad updates", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", podrefs.AttrUpdates: "inplace"}), "want atomic (the default) or inPlace"},
		{"no pod info", map[string]string{podrefs.AttrConfigMap: "c"}, "podInfoOnMount: true"},
		{"a persistent volume", podAttrs(map[string]string{podrefs.AttrConfigMap: "c", attrEphemeral: "false"}), "only inline ephemeral volumes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseAttributes(tt.attrs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one that says %q", err, tt.want)
			}
		})
	}
}
