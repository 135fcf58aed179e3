//go:build e2e

package e2e

import (
	"math/rand/v2"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The property test's generator: ConfigMaps and ConfigMap volume sources
// that exercise what the API allows, and, one in ten, something it does
// not (which the apiserver then refuses, and the test counts).

const keyAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."

func randomName(rng *rand.Rand, min, max int) string {
	n := min + rng.IntN(max-min+1)
	var b strings.Builder
	for range n {
		b.WriteByte(keyAlphabet[rng.IntN(len(keyAlphabet))])
	}
	return b.String()
}

// randomKey is a valid ConfigMap key: the API takes [-._a-zA-Z0-9]{1,253},
// not "." or "..", not starting with "..".
func randomKey(rng *rand.Rand) string {
	for {
		var key string
		switch rng.IntN(20) {
		case 0:
			key = randomName(rng, 200, 253)
		case 1:
			key = "." + randomName(rng, 1, 8) // a dotfile
		default:
			key = randomName(rng, 1, 24)
		}
		if key != "." && !strings.HasPrefix(key, "..") {
			return key
		}
	}
}

// randomPath is an item's path: nested, with "." elements, doubled
// slashes, long elements, and now and then what the API refuses.
func randomPath(rng *rand.Rand) string {
	depth := 1 + rng.IntN(4)
	parts := make([]string, 0, depth)
	for range depth {
		switch rng.IntN(25) {
		case 0:
			parts = append(parts, ".")
		case 1:
			if len(parts) > 0 { // a doubled slash; a leading one is absolute
				parts = append(parts, "")
			}
		case 2:
			parts = append(parts, randomName(rng, 250, 260)) // past 255: the writers refuse it
		default:
			name := randomName(rng, 1, 12)
			if strings.HasPrefix(name, "..") && !slices.ContainsFunc(parts, func(p string) bool { return p != "." && p != "" }) {
				// The API refuses a path that starts with "..", and
				// nodeagent one that does once its "./" is gone, where the
				// kubelet writes it (docs/kubelet-behaviour.md).
				name = "x" + name
			}
			parts = append(parts, name)
		}
	}
	p := strings.Join(parts, "/")
	if rng.IntN(15) == 0 {
		p = "./" + p
	}
	return p
}

func randomMode(rng *rand.Rand) *int32 {
	modes := []int32{0o400, 0o440, 0o444, 0o600, 0o640, 0o644, 0o755, 0o777, int32(rng.IntN(0o1000))}
	m := modes[rng.IntN(len(modes))]
	return &m
}

func randomValue(rng *rand.Rand, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

// randomConfigMapVolume returns a ConfigMap (without a name) and a volume
// source reading it (without the name). Volume i's shape cycles through
// the big cases: thousands of keys, a value near the 1 MiB object limit.
func randomConfigMapVolume(rng *rand.Rand, i int) (*corev1.ConfigMap, *corev1.ConfigMapVolumeSource) {
	cm := &corev1.ConfigMap{Data: map[string]string{}, BinaryData: map[string][]byte{}}
	keys := 1 + rng.IntN(12)
	size := func() int { return rng.IntN(2048) }
	switch i % 10 {
	case 3:
		keys, size = 2000+rng.IntN(1000), func() int { return rng.IntN(100) }
	case 7:
		keys, size = 1, func() int { return 1000<<10 - rng.IntN(64<<10) }
	}
	var names []string
	for range keys {
		key := randomKey(rng)
		if _, dup := cm.Data[key]; dup {
			continue
		}
		if _, dup := cm.BinaryData[key]; dup {
			continue
		}
		names = append(names, key)
		if rng.IntN(5) == 0 {
			cm.BinaryData[key] = randomValue(rng, size())
		} else {
			cm.Data[key] = strings.ToValidUTF8(string(randomValue(rng, size())), "?")
		}
	}
	source := &corev1.ConfigMapVolumeSource{}
	if rng.IntN(2) == 0 {
		source.DefaultMode = randomMode(rng)
	}
	if rng.IntN(5) == 0 {
		optional := true
		source.Optional = &optional
	}
	// One volume in ten asks for what the API refuses: a key or a path
	// element "..".
	if rng.IntN(10) == 0 {
		cm.Data[".."+randomName(rng, 1, 5)] = "refused"
	}
	if rng.IntN(10) < 6 && len(names) < 100 {
		for range 1 + rng.IntN(6) {
			item := corev1.KeyToPath{Key: names[rng.IntN(len(names))], Path: randomPath(rng)}
			if rng.IntN(10) == 0 {
				item.Key = randomKey(rng) // probably missing
			}
			if rng.IntN(2) == 0 {
				item.Mode = randomMode(rng)
			}
			source.Items = append(source.Items, item)
		}
		if rng.IntN(10) == 0 {
			source.Items[0].Path = "../" + source.Items[0].Path
		}
		if rng.IntN(6) == 0 && len(source.Items) > 0 {
			// A path that is a file here and a directory there.
			first := source.Items[0]
			source.Items = append(source.Items, corev1.KeyToPath{Key: first.Key, Path: first.Path + "/below"})
		}
	}
	return cm, source
}
