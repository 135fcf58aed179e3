package main

import (
	"runtime"
	"runtime/debug"
	"testing"
)

// The agent and the driver collect at their own GOGC unless $GOGC says
// otherwise.
func TestSetGCPercent(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })

	for _, percent := range []int{agentGCPercent, driverGCPercent} {
		if got := setGCPercent(func(string) string { return "" }, percent); got != percent {
			t.Errorf("without $GOGC: %d, want %d", got, percent)
		}
	}
	debug.SetGCPercent(80) // as the runtime would have read GOGC=80
	if got := setGCPercent(func(k string) string {
		if k == "GOGC" {
			return "80"
		}
		return ""
	}, agentGCPercent); got != 80 {
		t.Errorf("with GOGC=80: %d, want 80 kept", got)
	}
}

// GOGC is read without changing it, and halved until the analyzer's first
// report: restored after, left alone where collection is off.
func TestCollectMoreOften(t *testing.T) {
	was := debug.SetGCPercent(50)
	t.Cleanup(func() { debug.SetGCPercent(was) })
	restore := collectMoreOften()
	if got := gcPercent(); got != 25 {
		t.Errorf("collecting more often: GOGC %d, want 25", got)
	}
	restore()
	restore()
	if got := gcPercent(); got != 50 {
		t.Errorf("restored: GOGC %d, want 50", got)
	}
	debug.SetGCPercent(-1)
	collectMoreOften()()
	if got := gcPercent(); got != -1 {
		t.Errorf("GOGC=off: %d, want -1 kept", got)
	}
}

// Heap profiling is off unless the agent serves profiles or the
// environment asks for it.
func TestSetHeapProfiling(t *testing.T) {
	was := runtime.MemProfileRate
	t.Cleanup(func() { runtime.MemProfileRate = was })
	noEnv := func(string) string { return "" }

	for _, tc := range []struct {
		name      string
		profiling bool
		godebug   string
		want      bool
	}{
		{"default", false, "", false},
		{"--profiling", true, "", true},
		{"GODEBUG=memprofilerate=1", false, "gctrace=1,memprofilerate=1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.MemProfileRate = 512 * 1024
			getenv := noEnv
			if tc.godebug != "" {
				getenv = func(k string) string {
					if k == "GODEBUG" {
						return tc.godebug
					}
					return ""
				}
			}
			if got := setHeapProfiling(tc.profiling, getenv); got != tc.want {
				t.Errorf("setHeapProfiling = %v, want %v (MemProfileRate %d)", got, tc.want, runtime.MemProfileRate)
			}
		})
	}
}
