package e2eutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DelayValueKey is the one key of every ConfigMap or Secret an
// update-delay run updates: its value counts the updates, "0" before the
// first.
const DelayValueKey = "value"

// DelayFile is one volume's file of one object in one pod: Path is where
// this process reads it (a container's root seen through /proc, or a
// volume's directory), Object indexes DelayRun.Objects, Group names the
// group its delays count in (a node, a kind of volume).
type DelayFile struct {
	Group  string
	Object int
	Path   string
}

// DelayRun updates ConfigMaps (or Secrets) at random and measures how long
// each update takes to reach the files of the volumes that mount them.
type DelayRun struct {
	Client    kubernetes.Interface
	Namespace string
	// Objects are the names of the ConfigMaps updated, each holding
	// DelayValueKey = "0" when the run starts; Secrets when Secrets is set.
	Objects []string
	Secrets bool
	// Window is how long updates are sent; MeanGap the mean time between
	// two updates of one object.
	Window, MeanGap time.Duration
	// Poll is how often every file is read besides the reads inotify
	// prompts (DelayMeter.watch): the resolution of a delay where inotify
	// reports nothing.
	Poll time.Duration
	// Longest is the most an update may take: the run fails when updates
	// are still not in every file that long after Window.
	Longest time.Duration
	// Stop, when set, ends the updates once it is closed, instead of
	// after Window: a run around a disruption lasts as long as it does.
	Stop <-chan struct{}
}

// runWindow is when a run's updates end: after its Window, or once its
// Stop is closed (its end is then the first moment a caller sees that).
type runWindow struct {
	mu   sync.Mutex
	end  time.Time
	stop <-chan struct{}
}

func newRunWindow(window time.Duration, stop <-chan struct{}) *runWindow {
	if stop == nil {
		return &runWindow{end: time.Now().Add(window)}
	}
	return &runWindow{stop: stop}
}

// endsBefore says whether the updates ended before t.
func (w *runWindow) endsBefore(t time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.end.IsZero() {
		select {
		case <-w.stop:
			w.end = time.Now()
		default:
			return false
		}
	}
	return t.After(w.end)
}

// sleep waits d, or less where the updates end first: a sender then
// stops at the window's end, not a gap of its own after it (which would
// leave the run's last seconds quieter than the rest).
func (w *runWindow) sleep(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	var ends <-chan time.Time
	if w.stop == nil { // end is fixed from the start
		ends = time.After(time.Until(w.end))
	}
	select {
	case <-timer.C:
	case <-ends:
	case <-w.stop:
	}
}

// Measure runs the updates and returns each node's delays in seconds, and
// by node and ConfigMap the share of them that inotify's prompt measured (the rest have
// the poll's resolution).
//
// Each ConfigMap is updated at the times of a Poisson process of its own,
// which knows nothing of the kubelets: its updates fall anywhere in the sync
// ticks and in a Cache node's refresh cycle, as the model's do. A file's
// delay for an update is the time from the update request's sending (the
// apiserver accepts it after that, so its own write counts in the delay)
// until the file holds that value or a later one (content fetched after a later update was fetched
// after this one too). Each file is read as soon as inotify reports a
// change in its directory, and every Poll besides.
func (r DelayRun) Measure(ctx context.Context, files []DelayFile) (map[string][]float64, map[string]float64, error) {
	m, err := r.MeasureMeter(ctx, files)
	if err != nil {
		return nil, nil, err
	}
	return m.Result(), m.Notified(), nil
}

// measure is Measure, returning the meter with every Arrival.
func (r DelayRun) MeasureMeter(ctx context.Context, files []DelayFile) (*DelayMeter, error) {
	m := newDelayMeter(files, len(r.Objects))
	stopWatching, err := m.watch()
	if err != nil {
		return nil, err
	}
	defer stopWatching()
	window := newRunWindow(r.Window, r.Stop)
	var wg sync.WaitGroup
	failures := make(chan error, len(r.Objects))
	for i, name := range r.Objects {
		wg.Go(func() {
			if err := r.update(ctx, name, rand.New(rand.NewPCG(uint64(i), 120255)), window, func(sent time.Time) { m.sent(i, sent) }, m.wrote); err != nil {
				failures <- err
			}
		})
	}
	defer wg.Wait()
	for {
		now := time.Now()
		settled := m.readAll()
		select {
		case err := <-failures:
			return nil, err
		default:
		}
		if window.endsBefore(now) && settled {
			return m, nil
		}
		if window.endsBefore(now.Add(-r.Longest)) {
			return nil, fmt.Errorf("updates still not in every volume %s after the last could be sent", r.Longest)
		}
		time.Sleep(r.Poll)
	}
}

// update sends the updates of one object until the window ends, calling sending
// just before each update request leaves: the apiserver accepts it after
// that, and a volume can show it before the response comes back (the
// watch that carries it to the driver can be faster than the response).
// wrote is called with each update request's duration, to its response.
func (r DelayRun) update(ctx context.Context, name string, rng *rand.Rand, window *runWindow, sending func(time.Time), wrote func(time.Duration)) error {
	for value := 1; ; value++ {
		window.sleep(time.Duration(rng.ExpFloat64() * float64(r.MeanGap)))
		if window.endsBefore(time.Now()) {
			return nil
		}
		var sent time.Time
		if err := r.set(ctx, name, strconv.Itoa(value), func(at time.Time) { sent = at; sending(at) }); err != nil {
			return err
		}
		wrote(time.Since(sent))
	}
}

// set reads the object and writes value as its DelayValueKey, calling
// sending as the write leaves.
func (r DelayRun) set(ctx context.Context, name, value string, sending func(time.Time)) error {
	if r.Secrets {
		secrets := r.Client.CoreV1().Secrets(r.Namespace)
		s, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Data[DelayValueKey] = []byte(value)
		sending(time.Now())
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
		return err
	}
	configMaps := r.Client.CoreV1().ConfigMaps(r.Namespace)
	cm, err := configMaps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Data[DelayValueKey] = value
	sending(time.Now())
	_, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// Sent counts the run's updates: each object's value is the number of its
// updates.
func (r DelayRun) Sent(t *testing.T) int {
	t.Helper()
	total := 0
	for _, name := range r.Objects {
		value, err := r.value(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(value)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

// value is the object's DelayValueKey.
func (r DelayRun) value(ctx context.Context, name string) (string, error) {
	if r.Secrets {
		s, err := r.Client.CoreV1().Secrets(r.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return string(s.Data[DelayValueKey]), nil
	}
	cm, err := r.Client.CoreV1().ConfigMaps(r.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return cm.Data[DelayValueKey], nil
}
