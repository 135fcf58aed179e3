package reconciler

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

// start runs one operation in its own goroutine. Called with r.mu held.
func (r *Reconciler) start(ctx context.Context, op Operation) {
	begin := r.clock.Now()
	o := r.op(op.Key)
	o.inFlight, o.startedAt = true, begin
	changed := r.takeChangeLocked(op.Key)
	r.running.Add(1)
	go func() {
		defer r.running.Done()
		logger := klog.FromContext(ctx).WithValues("operation", op.Kind, "volume", op.Key.Volume, "podUID", op.Key.PodUID)
		if name := op.Request.SubjectName(); name != "" {
			logger = logger.WithValues("pod", name)
		}
		res, err := r.execute(ctx, logger, op)
		r.opts.Recorder.OperationDone(op.Kind, err, r.clock.Since(begin))
		if res.Wrote {
			r.opts.Recorder.VolumeWritten()
		}
		r.changeRead(op, changed, err)
		r.finish(ctx, logger, op, res, err, changed)
	}()
}

// PanicError is an operation that panicked. The reconciler recovers it as
// the operation's failure, retried with backoff like any other, so that one
// volume's bug cannot end the process and every other volume with it.
type PanicError struct {
	Kind  OperationKind
	Value any
	// Stack is the panicking goroutine's; the log has it, the event not.
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("the %s operation panicked: %v", e.Kind, e.Value)
}

// execute runs op through the executor and turns a panic into its failure.
func (r *Reconciler) execute(ctx context.Context, logger klog.Logger, op Operation) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			perr := &PanicError{Kind: op.Kind, Value: p, Stack: debug.Stack()}
			logger.Error(perr, "Volume operation panicked", "stack", string(perr.Stack))
			res, err = Result{}, perr
		}
	}()
	if op.Kind == Unmount {
		return Result{}, r.opts.Executor.TearDown(ctx, op)
	}
	return r.opts.Executor.SetUp(ctx, logger, op)
}

// finish records an operation's result in the actual state, hands the
// volume back if it still needs something, and reports a failure as a
// FailedMount event on the pod, for a remount as for a first mount. A
// failed mount or remount leaves the change it started after (changed)
// unread.
func (r *Reconciler) finish(ctx context.Context, logger klog.Logger, op Operation, res Result, err error, changed time.Time) {
	r.mu.Lock()
	o := r.op(op.Key)
	// A ConfigMap change seen while the operation ran may have come after
	// its read: read again now, whatever the outcome.
	changedMeanwhile := o.changedMeanwhile
	o.inFlight, o.changedMeanwhile = false, false
	switch {
	case err != nil:
		o.failed(err, r.clock.Now(), changedMeanwhile)
		if op.Kind != Unmount {
			r.unreadAgainLocked(op.Key, changed)
		}
		if op.Kind == Remount {
			r.opts.Actual.MarkRemountRequired(op.Key)
		}
	case op.Kind == Unmount:
		r.opts.Actual.MarkUnmounted(op.Key)
		delete(r.ops, op.Key)
	default:
		r.opts.Actual.MarkMounted(cache.MountedVolume{
			Key: op.Key, Request: op.Request, Spec: op.Spec, Dir: op.Dir, RemountRequired: changedMeanwhile,
			ResourceVersion: res.ResourceVersion, ContentHash: res.ContentHash, Stamp: res.Stamp,
		})
		delete(r.ops, op.Key)
	}
	// What changed while it ran, or its failure, is for the next pass.
	if !r.settled(op.Key) {
		r.handOverLocked(op.Key)
	}
	// Under the lock, so that the gauge's values come in order.
	r.opts.Recorder.VolumesMounted(r.opts.Actual.Len())
	r.mu.Unlock()
	if changedMeanwhile {
		select {
		case r.changeSeen <- struct{}{}:
		default:
		}
	}

	if err == nil {
		logger.V(4).Info("Volume operation succeeded", "resourceVersion", res.ResourceVersion)
		return
	}
	if ctx.Err() != nil {
		// The manager is stopping: the operation was cut short, not failed.
		logger.V(2).Info("Volume operation abandoned at shutdown", "err", err)
		return
	}
	logger.Error(err, "Volume operation failed; will retry with backoff")
	if op.Request != nil && op.Request.Subject != nil && r.opts.Events != nil && op.Kind != Unmount {
		r.opts.Events.Eventf(op.Request.Subject, corev1.EventTypeWarning, "FailedMount",
			"MountVolume.SetUp failed for volume %q: %v", op.Key.Volume, err)
	}
}
