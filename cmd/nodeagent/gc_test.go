package main

import (
	"runtime/debug"
	"testing"
)

// The agent collects at defaultGCPercent unless $GOGC says otherwise.
func TestSetGCPercent(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })

	if got := setGCPercent(func(string) string { return "" }); got != defaultGCPercent {
		t.Errorf("without $GOGC: %d, want %d", got, defaultGCPercent)
	}
	debug.SetGCPercent(80) // as the runtime would have read GOGC=80
	if got := setGCPercent(func(k string) string {
		if k == "GOGC" {
			return "80"
		}
		return ""
	}); got != 80 {
		t.Errorf("with GOGC=80: %d, want 80 kept", got)
	}
}
