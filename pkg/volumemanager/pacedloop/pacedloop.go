// Package pacedloop runs a pass on a fixed grid, but only at the grid
// points where one is due. The volume manager's populator and reconciler
// each run on one, so that they act on a change at the same point as the
// kubelet's loops, which run every 100 ms, and an idle node wakes neither.
//
// Contract:
//   - passes run at origin + k·period on the loop's clock, at least one
//     period apart, never two at once;
//   - a pass is due after a Kick (any number of kicks between two passes
//     make one pass) or once the time the last pass returned has come;
//   - Kick never blocks, and may be called before Run starts: the kick then
//     waits for it.
package pacedloop

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Loop runs a pass at the points of a fixed grid, origin + k·period on
// its clock, as a loop that runs every period would, but only at the
// points where a pass is due: after a kick (something changed since the
// last pass) or once the time the last pass asked to be run again has
// come. A change is therefore acted on at the same grid point as before,
// and a point with nothing due wakes no goroutine at all.
//
// The skipped points are the saving: a Go process woken ten times a second
// spends about a millicore on the wake-ups alone (the scheduler, the
// timer, the futex), whatever the pass then does, and the populator and the
// reconciler were two such loops (docs/performance.md, "Idle cost").
type Loop struct {
	clock  clock.WithTicker
	origin time.Time
	period time.Duration
	// kicks holds at most one kick: those that come while a pass is due
	// already coalesce.
	kicks chan struct{}
}

// New returns a loop whose grid starts at origin.
func New(c clock.WithTicker, origin time.Time, period time.Duration) *Loop {
	return &Loop{clock: c, origin: origin, period: period, kicks: make(chan struct{}, 1)}
}

// Kick asks for a pass at the next grid point. It never blocks.
func (l *Loop) Kick() {
	select {
	case l.kicks <- struct{}{}:
	default:
	}
}

// Run runs pass at the grid points where one is due, until ctx ends. pass
// returns when it must run again even if nothing kicks it (a retry's
// backoff ending), or the zero time for never.
func (l *Loop) Run(ctx context.Context, pass func(context.Context) time.Time) {
	var again, last time.Time
	for {
		if !l.waitDue(ctx, again) {
			return
		}
		at := l.nextPoint(l.clock.Now(), last)
		if !l.SleepUntil(ctx, at) {
			return
		}
		// A kick that came while the pass was due is for this pass: its
		// work was handed over before it kicked, and the pass sees it.
		select {
		case <-l.kicks:
		default:
		}
		last = at
		again = pass(ctx)
	}
}

// waitDue blocks until a kick comes or again (if not zero) has come, and
// says false if ctx ended first.
func (l *Loop) waitDue(ctx context.Context, again time.Time) bool {
	var due <-chan time.Time
	if !again.IsZero() {
		wait := again.Sub(l.clock.Now())
		if wait <= 0 {
			return ctx.Err() == nil
		}
		timer := l.clock.NewTimer(wait)
		defer timer.Stop()
		due = timer.C()
	}
	select {
	case <-ctx.Done():
		return false
	case <-l.kicks:
	case <-due:
	}
	return true
}

// nextPoint is the first grid point at or after now and after last, the
// point of the previous pass: passes stay at least a period apart.
func (l *Loop) nextPoint(now, last time.Time) time.Time {
	k := (now.Sub(l.origin) + l.period - 1) / l.period
	at := l.origin.Add(max(k, 0) * l.period)
	if !last.IsZero() && !at.After(last) {
		at = last.Add(l.period)
	}
	return at
}

// SleepUntil waits for at on the clock, and says false if ctx ended
// first.
func (l *Loop) SleepUntil(ctx context.Context, at time.Time) bool {
	wait := at.Sub(l.clock.Now())
	if wait <= 0 {
		return ctx.Err() == nil
	}
	timer := l.clock.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C():
		return true
	}
}
