package reconciler

import (
	"errors"
	"testing"
	"time"
)

// The retry delay doubles from 500 ms to 2 m 2 s, starts again after a
// long quiet spell, and a change of what the volume reads cancels it.
func TestRetryDelay(t *testing.T) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	var o volumeOp
	boom := errors.New("boom")
	var delays []time.Duration
	for range 10 {
		o.failed(boom, now, false)
		delays = append(delays, o.retryDelay)
		now = now.Add(o.retryDelay)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, 64 * time.Second, maxRetryDelay, maxRetryDelay}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", delays, want)
		}
	}
	if !o.waiting(o.failedAt.Add(time.Minute)) || o.waiting(o.failedAt.Add(maxRetryDelay)) {
		t.Errorf("waiting: want true a minute after the failure, false after the full delay %s", o.retryDelay)
	}
	if o.err != boom {
		t.Errorf("err %q, want boom", o.err)
	}

	o.failed(boom, o.failedAt.Add(2*maxRetryDelay+time.Second), false)
	if o.retryDelay != initialRetryDelay {
		t.Errorf("after a long quiet spell: %s, want %s", o.retryDelay, initialRetryDelay)
	}
	o.failed(boom, o.failedAt.Add(time.Second), true)
	if o.retryDelay != 0 || o.waiting(o.failedAt) {
		t.Errorf("retry at once: delay %s, waiting %v", o.retryDelay, o.waiting(o.failedAt))
	}
	o.failed(boom, o.failedAt.Add(time.Second), false)
	if o.retryDelay != initialRetryDelay {
		t.Errorf("the failure after an immediate retry: %s, want %s", o.retryDelay, initialRetryDelay)
	}
}
