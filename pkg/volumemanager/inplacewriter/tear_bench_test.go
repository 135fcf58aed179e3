package inplacewriter

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkReadsDuringRewrite measures what a reader sees while a file is
// rewritten in place, for the order Write uses (write over the old
// content, then truncate) and for the obvious one (truncate, then write):
// of every million reads that overlap the rewrites, how many see an empty
// file and how many a mix of the two contents. docs/csi.md quotes a run of
//
//	go test -run '^$' -bench ReadsDuringRewrite -benchtime 20000x -count 6 ./pkg/volumemanager/inplacewriter/
//
// The two contents differ in length (the longer is 1.5 times the shorter),
// as most updates do, so the truncate matters.
func BenchmarkReadsDuringRewrite(b *testing.B) {
	for _, size := range []int{200, 64 << 10} {
		for _, order := range []struct {
			name    string
			rewrite func(f *os.File, data []byte) error
		}{
			{"write-then-truncate", func(f *os.File, data []byte) error {
				if _, err := f.WriteAt(data, 0); err != nil {
					return err
				}
				return f.Truncate(int64(len(data)))
			}},
			{"truncate-then-write", func(f *os.File, data []byte) error {
				if err := f.Truncate(0); err != nil {
					return err
				}
				_, err := f.WriteAt(data, 0)
				return err
			}},
		} {
			b.Run(fmt.Sprintf("%s/%dB", order.name, size), func(b *testing.B) {
				measureTears(b, size, order.rewrite)
			})
		}
	}
}

func measureTears(b *testing.B, size int, rewrite func(*os.File, []byte) error) {
	contents := [2][]byte{bytes.Repeat([]byte("a"), size), bytes.Repeat([]byte("b"), size*3/2)}
	path := filepath.Join(b.TempDir(), "file")
	if err := os.WriteFile(path, contents[0], 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()

	var stop atomic.Bool
	var reads, empty, mixed atomic.Int64
	var readers sync.WaitGroup
	readers.Go(func() {
		buf := make([]byte, 2*size)
		for !stop.Load() {
			r, err := os.Open(path) // as a container's process opens it
			if err != nil {
				continue
			}
			n, _ := r.ReadAt(buf, 0)
			r.Close()
			reads.Add(1)
			switch got := buf[:n]; {
			case n == 0:
				empty.Add(1)
			case !bytes.Equal(got, contents[0]) && !bytes.Equal(got, contents[1]):
				mixed.Add(1)
			}
		}
	})
	b.ResetTimer()
	for i := range b.N {
		if err := rewrite(f, contents[(i+1)%2]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	stop.Store(true)
	readers.Wait()
	perMillion := func(n int64) float64 { return float64(n) * 1e6 / float64(max(reads.Load(), 1)) }
	b.ReportMetric(perMillion(empty.Load()), "empty/Mreads")
	b.ReportMetric(perMillion(mixed.Load()), "mixed/Mreads")
	b.ReportMetric(float64(reads.Load())/float64(b.N), "reads/rewrite")
}
