package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"

	"github.com/nodeagent-io/nodeagent/pkg/compare/modes"
)

// startProfile starts a CPU profile of this process for mode's measured
// window, when the run profiles; the returned function stops it and writes
// a heap profile beside it. Both are read with `go tool pprof`.
func (r *runner) startProfile(mode modes.Mode) (stop func(), err error) {
	if r.profileDir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(r.profileDir, 0o755); err != nil {
		return nil, err
	}
	cpuPath := filepath.Join(r.profileDir, "cpu-"+string(mode)+".pprof")
	cpuFile, err := os.Create(cpuPath)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(cpuFile); err != nil {
		cpuFile.Close()
		return nil, fmt.Errorf("starting the CPU profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		cpuFile.Close()
		heapPath := filepath.Join(r.profileDir, "heap-"+string(mode)+".pprof")
		heapFile, err := os.Create(heapPath)
		if err != nil {
			r.progress.Done("%-19s heap profile: %v", mode, err)
			return
		}
		defer heapFile.Close()
		runtime.GC() // the live heap, as of now
		if err := pprof.Lookup("heap").WriteTo(heapFile, 0); err != nil {
			r.progress.Done("%-19s heap profile: %v", mode, err)
			return
		}
		r.progress.Done("%-19s profiles: %s, %s", mode, cpuPath, heapPath)
	}, nil
}
