package volumemanager

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// pacedLoop runs a pass at the points of a fixed grid, origin + k·period on
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
type pacedLoop struct {
	clock  clock.WithTicker
	origin time.Time
	period time.Duration
	// kicks holds at most one kick: those that come while a pass is due
	// already coalesce.
	kicks chan struct{}
}

func newPacedLoop(c clock.WithTicker, origin time.Time, period time.Duration) *pacedLoop {
	return &pacedLoop{clock: c, origin: origin, period: period, kicks: make(chan struct{}, 1)}
}

// kick asks for a pass at the next grid point. It never blocks.
func (l *pacedLoop) kick() {
	select {
	case l.kicks <- struct{}{}:
	default:
	}
}

// run runs pass at the grid points where one is due, until ctx ends. pass
// returns when it must run again even if nothing kicks it (a retry's
// backoff ending), or the zero time for never.
func (l *pacedLoop) run(ctx context.Context, pass func(context.Context) time.Time) {
	var again, last time.Time
	for {
		if !l.waitDue(ctx, again) {
			return
		}
		at := l.nextPoint(l.clock.Now(), last)
		if !l.sleepUntil(ctx, at) {
			return
		}
		last = at
		again = pass(ctx)
	}
}

// waitDue blocks until a kick comes or again (if not zero) has come, and
// says false if ctx ended first.
func (l *pacedLoop) waitDue(ctx context.Context, again time.Time) bool {
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
func (l *pacedLoop) nextPoint(now, last time.Time) time.Time {
	k := (now.Sub(l.origin) + l.period - 1) / l.period
	at := l.origin.Add(max(k, 0) * l.period)
	if !last.IsZero() && !at.After(last) {
		at = last.Add(l.period)
	}
	return at
}

// sleepUntil waits for at on the clock, and says false if ctx ended
// first.
func (l *pacedLoop) sleepUntil(ctx context.Context, at time.Time) bool {
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

// runLoops runs the populator and the reconciler, each on its paced loop,
// half a period apart, and the reconciler's woken passes, until ctx ends.
func (m *Manager) runLoops(ctx context.Context) {
	period := m.opts.LoopPeriod
	var loops sync.WaitGroup
	loops.Go(func() {
		m.populatorLoop.run(ctx, func(context.Context) time.Time {
			m.populate()
			return time.Time{} // never due without a kick
		})
	})
	loops.Go(func() {
		m.reconcilerLoop.run(ctx, func(ctx context.Context) time.Time {
			return m.reconcile(ctx)
		})
	})
	loops.Go(func() {
		// A pass as soon as RemountConfigMap asks, then at least half a
		// period before the next woken one: under an update storm a
		// volume takes at most thirty remounts a second (twenty woken,
		// ten on the grid), and the changes in between coalesce in
		// changeSeen.
		for {
			select {
			case <-ctx.Done():
				return
			case <-m.changeSeen:
				m.reconcile(ctx)
			}
			if !m.reconcilerLoop.sleepUntil(ctx, m.clock.Now().Add(period/2)) {
				return
			}
		}
	})
	loops.Wait()
}
