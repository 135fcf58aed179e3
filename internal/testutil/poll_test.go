package testutil

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a failure instead of stopping
// the test that uses it.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestEventually(t *testing.T) {
	var calls atomic.Int32
	Eventually(t, time.Millisecond, time.Second, func() error {
		if calls.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls.Load() != 3 {
		t.Errorf("cond called %d times, want 3", calls.Load())
	}
	r := &recorder{TB: t}
	Eventually(r, time.Millisecond, 20*time.Millisecond, func() error { return errors.New("no") })
	if r.failed == "" {
		t.Error("a condition that never holds did not fail the test")
	}
}

func TestWaitFor(t *testing.T) {
	start := time.Now()
	WaitFor(t, "50 ms", func() bool { return time.Since(start) > 50*time.Millisecond })
}
