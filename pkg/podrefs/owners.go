package podrefs

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// OwnedVolume is a mounted volume that asks for its files' owner (KEP-5936:
// defaultUser, and items' user), which only a kubelet with the gate
// AtomicWriteVolumeUserFields on sets: every other kubelet leaves the files
// root's.
type OwnedVolume struct {
	Name string
	// Fields are the fields that ask, as paths from the volume source
	// ("configMap.defaultUser", "projected.sources[1].secret.items[0].user").
	Fields []string
}

// ownerFields are the fields of v that ask for an owner.
func ownerFields(v *corev1.Volume) []string {
	var out []string
	user := func(path string, u *int64) {
		if u != nil {
			out = append(out, path)
		}
	}
	items := func(path string, items []corev1.KeyToPath) {
		for i, item := range items {
			user(fmt.Sprintf("%s.items[%d].user", path, i), item.User)
		}
	}
	switch {
	case v.ConfigMap != nil:
		user("configMap.defaultUser", v.ConfigMap.DefaultUser)
		items("configMap", v.ConfigMap.Items)
	case v.Secret != nil:
		user("secret.defaultUser", v.Secret.DefaultUser)
		items("secret", v.Secret.Items)
	case v.DownwardAPI != nil:
		user("downwardAPI.defaultUser", v.DownwardAPI.DefaultUser)
		for i, item := range v.DownwardAPI.Items {
			user(fmt.Sprintf("downwardAPI.items[%d].user", i), item.User)
		}
	case v.Projected != nil:
		user("projected.defaultUser", v.Projected.DefaultUser)
		for i, s := range v.Projected.Sources {
			path := fmt.Sprintf("projected.sources[%d]", i)
			switch {
			case s.ConfigMap != nil:
				items(path+".configMap", s.ConfigMap.Items)
			case s.Secret != nil:
				items(path+".secret", s.Secret.Items)
			case s.DownwardAPI != nil:
				for j, item := range s.DownwardAPI.Items {
					user(fmt.Sprintf("%s.downwardAPI.items[%d].user", path, j), item.User)
				}
			}
		}
	}
	return out
}
