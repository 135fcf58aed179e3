// Package testutil holds the polling every test of the project shares:
// conditions checked on apimachinery's wait until they hold or a timeout
// passes, failing the test with the condition's last answer. It depends
// on nothing of the project's, so any package's tests may use it.
package testutil

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Eventually checks cond every interval, at once first, until it returns
// nil; after timeout it fails t with cond's last error.
func Eventually(t testing.TB, interval, timeout time.Duration, cond func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(context.Context) (bool, error) {
		last = cond()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("still failing after %s: %v", timeout, last)
	}
}

// WaitFor is Eventually for the unit tests' in-memory conditions: checked
// every millisecond for up to 10 seconds.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Eventually(t, time.Millisecond, 10*time.Second, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("waiting for %s", what)
	})
}
