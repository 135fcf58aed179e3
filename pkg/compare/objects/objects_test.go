package objects

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// runParallel runs every job and returns nil, or the first error.
func TestRunParallel(t *testing.T) {
	var ran atomic.Int64
	jobs := make([]func() error, 120)
	for i := range jobs {
		jobs[i] = func() error { ran.Add(1); return nil }
	}
	var mu sync.Mutex
	reported := 0
	err := runParallel(context.Background(), jobs, 4, func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		reported = max(reported, done)
	}, 10, 130)
	if err != nil || ran.Load() != 120 || reported != 130 {
		t.Errorf("got %v after %d jobs, last report %d; want nil after 120, report 130", err, ran.Load(), reported)
	}
	jobs[7] = func() error { return errors.New("boom") }
	if err := runParallel(context.Background(), jobs, 4, nil, 0, 0); err == nil || err.Error() != "boom" {
		t.Errorf("with a failing job: %v, want boom", err)
	}
}
