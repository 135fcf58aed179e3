package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
)

// The agent process tunes Go's runtime for a small, slowly allocating heap
// that lives for months (docs/performance.md, "Idle cost"). Each setting
// gives way to the environment's: $GOGC, and memprofilerate in $GODEBUG.

// agentGCPercent is the agent's GOGC unless the environment sets one.
// Go lets the heap grow by GOGC percent of what is live plus the goroutine
// stacks before it collects, and an agent's stacks are as large as its
// live heap (110 pods with watches: about 3.5 MiB each, four goroutines per
// watch and one per pod worker). With Go's default of 100 the heap doubled
// and more between collections; at 25 it grows by about half of what is
// live. An agent allocates slowly, so collections stay rare: with 110 pods
// the resident peak falls by about 1 MiB from 50 (and 50 had saved 1.5 to
// 3.5 MiB from 100) at no CPU that the idle measurement can see
// (docs/performance.md, "Idle cost").
const agentGCPercent = 25

// driverGCPercent is the CSI driver's GOGC unless the environment sets
// one. A driver's volumes are written each time their objects change, so
// under load it allocates steadily, and at the agent's 25 its collections
// were a tenth of its CPU (docs/csi.md, "What it costs"); at 50 they run
// half as often, for a heap that grows by its live size between them.
const driverGCPercent = 50

// setGCPercent applies percent unless $GOGC is set, and returns the
// percentage in effect (-1: collection off, as GOGC=off).
func setGCPercent(getenv func(string) string, percent int) int {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
	return gcPercent()
}

// gcPercent is the GOGC in effect (-1: collection off), read without
// changing it.
func gcPercent() int {
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 100 // a runtime without the metric: Go's default
	}
	percent := sample[0].Value.Uint64()
	if percent > math.MaxInt32 {
		// GOGC=off: the runtime's -1, as an unsigned number.
		return -1
	}
	return int(percent)
}

// collectMoreOften halves GOGC (where collection is on) and returns what
// restores it. analyze --serve's start, the lists and the first
// computation, allocates several times what the analysis then holds, all of
// it short-lived: at 10,000 nodes it made the analyzer's highest peak,
// above the peaks under a stream of changes. Collecting twice as often until
// the first report is out delays that report (make analyze-scale's record
// has by how much), once.
func collectMoreOften() (restore func()) {
	before := gcPercent()
	if before <= 0 {
		return func() {}
	}
	debug.SetGCPercent(max(before/2, 10))
	var once sync.Once
	return func() { once.Do(func() { debug.SetGCPercent(before) }) }
}

// setHeapProfiling turns Go's heap profiling off unless --profiling serves
// the profiles or $GODEBUG sets memprofilerate, and reports whether it is
// on. Go samples an allocation every 512 KiB by default, for profiles an
// agent serves only with --profiling, and files each sample's stack in a
// hash table that scatters a few hundred entries over 1.4 MiB, so that
// most of its pages end up resident: about 1 MiB of an agent's 30. Called
// as early as the flags allow: samples taken before stay, none are added.
func setHeapProfiling(profiling bool, getenv func(string) string) bool {
	if !profiling && !strings.Contains(getenv("GODEBUG"), "memprofilerate=") {
		runtime.MemProfileRate = 0
	}
	return runtime.MemProfileRate != 0
}
