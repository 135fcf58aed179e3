package pacedloop

import (
	"context"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
)

// pacedRun runs a Loop with a 100 ms grid from t0 on a fake clock;
// each pass sends the clock's time and returns the next retry it is told.
type pacedRun struct {
	t      *testing.T
	clock  *testingclock.FakeClock
	loop   *Loop
	passes chan time.Time
	retry  chan time.Time
}

var t0 = time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)

func startPaced(t *testing.T) *pacedRun {
	r := &pacedRun{t: t, clock: testingclock.NewFakeClock(t0), passes: make(chan time.Time, 10), retry: make(chan time.Time, 10)}
	r.loop = New(r.clock, t0, 100*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		r.loop.Run(ctx, func(context.Context) time.Time {
			r.passes <- r.clock.Now()
			select {
			case at := <-r.retry:
				return at
			default:
				return time.Time{}
			}
		})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// pass waits for the next pass and wants it at want.
func (r *pacedRun) pass(want time.Time) {
	r.t.Helper()
	select {
	case got := <-r.passes:
		if !got.Equal(want) {
			r.t.Fatalf("pass at t0+%v, want t0+%v", got.Sub(t0), want.Sub(t0))
		}
	case <-time.After(10 * time.Second):
		r.t.Fatalf("no pass; want one at t0+%v", want.Sub(t0))
	}
}

// noPass wants no pass to have run.
func (r *pacedRun) noPass() {
	r.t.Helper()
	select {
	case got := <-r.passes:
		r.t.Fatalf("unexpected pass at t0+%v", got.Sub(t0))
	default:
	}
}

// stepWhenWaiting moves the clock by d once the loop waits on a timer.
func (r *pacedRun) stepWhenWaiting(d time.Duration) {
	testutil.WaitFor(r.t, "the loop to wait", r.clock.HasWaiters)
	r.clock.Step(d)
}

// A loop that nothing kicks sleeps through its grid points; a kick runs
// one pass at the next point, never before it, and kicks that come while
// one is due coalesce into it.
func TestPacedLoopRunsOnlyWhenKicked(t *testing.T) {
	r := startPaced(t)
	r.clock.Step(time.Second)
	r.loop.Kick() // at a grid point: runs there
	r.pass(t0.Add(time.Second))
	if r.clock.HasWaiters() {
		t.Fatal("an idle loop holds a timer")
	}

	r.clock.Step(30 * time.Millisecond)
	r.loop.Kick()
	r.loop.Kick()
	r.stepWhenWaiting(60 * time.Millisecond) // t0+1.09 s
	r.noPass()
	r.stepWhenWaiting(10 * time.Millisecond)
	r.pass(t0.Add(1100 * time.Millisecond))
	r.clock.Step(time.Second)
	r.noPass()
}

// A pass that asks to run again (a retry's backoff) gets the first grid
// point after that time without a kick; passes stay a period apart.
func TestPacedLoopRunsAgainWhenAsked(t *testing.T) {
	r := startPaced(t)
	r.retry <- t0.Add(250 * time.Millisecond)
	r.loop.Kick()
	r.pass(t0)
	r.stepWhenWaiting(250 * time.Millisecond) // the retry time
	r.stepWhenWaiting(49 * time.Millisecond)
	r.noPass()
	r.stepWhenWaiting(time.Millisecond)
	r.pass(t0.Add(300 * time.Millisecond))

	// A kick just after a pass at a grid point waits for the next one.
	r.loop.Kick()
	r.stepWhenWaiting(100 * time.Millisecond)
	r.pass(t0.Add(400 * time.Millisecond))
}

func TestPacedLoopNextPoint(t *testing.T) {
	l := New(nil, t0.Add(50*time.Millisecond), 100*time.Millisecond)
	for _, c := range []struct{ now, last, want time.Duration }{
		{now: 0, want: 50},                  // before the origin: the origin
		{now: 50, want: 50},                 // on a point
		{now: 51, want: 150},                // just after one
		{now: 150, last: 150, want: 250},    // the point of the last pass
		{now: 1049, last: 950, want: 1050},  // a point later
		{now: 1050, last: 1050, want: 1150}, // never twice at one point
	} {
		var last time.Time
		if c.last != 0 {
			last = t0.Add(c.last * time.Millisecond)
		}
		if got := l.nextPoint(t0.Add(c.now*time.Millisecond), last); !got.Equal(t0.Add(c.want * time.Millisecond)) {
			t.Errorf("nextPoint(t0+%dms, last t0+%dms) = t0+%v, want t0+%dms", c.now, c.last, got.Sub(t0), c.want)
		}
	}
}
