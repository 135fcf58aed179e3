package atomicwriter

import (
	"fmt"
	"testing"
)

// The writer's hot paths, for `make bench`: a volume's first write, the
// remount of unchanged content that every pod sync does, and a real
// update, for a small payload and one near the 1 MiB object limit.

func benchPayload(files, size int, generation byte) map[string]FileProjection {
	payload := make(map[string]FileProjection, files)
	for i := range files {
		data := make([]byte, size)
		for j := range data {
			data[j] = generation + byte(j)
		}
		payload[fmt.Sprintf("key-%02d", i)] = FileProjection{Data: data, Mode: 0o644}
	}
	return payload
}

var benchSizes = []struct {
	name        string
	files, size int
}{
	{"small", 4, 256},
	{"1MiB", 8, 128 << 10},
}

func BenchmarkWriteFirst(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			payload := benchPayload(s.files, s.size, 0)
			b.SetBytes(int64(s.files * s.size))
			for i := 0; b.Loop(); i++ {
				if _, err := Write(fmt.Sprintf("%s/%d", b.TempDir(), i), payload, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWriteUnchanged(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			dir, payload := b.TempDir(), benchPayload(s.files, s.size, 0)
			if _, err := Write(dir, payload, Options{}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(s.files * s.size))
			for b.Loop() {
				if changed, err := Write(dir, payload, Options{}); err != nil || changed {
					b.Fatalf("changed %v, %v", changed, err)
				}
			}
		})
	}
}

func BenchmarkWriteUpdate(b *testing.B) {
	for _, s := range benchSizes {
		b.Run(s.name, func(b *testing.B) {
			dir := b.TempDir()
			payloads := []map[string]FileProjection{benchPayload(s.files, s.size, 0), benchPayload(s.files, s.size, 1)}
			b.SetBytes(int64(s.files * s.size))
			for i := 0; b.Loop(); i++ {
				if _, err := Write(dir, payloads[i%2], Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
