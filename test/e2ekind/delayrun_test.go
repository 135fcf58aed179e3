//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent-io/nodeagent/pkg/analyze"
	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/report"
)

// delayValueKey is the one key of every ConfigMap or Secret an
// update-delay run updates: its value counts the updates, "0" before the
// first.
const delayValueKey = "value"

// delayFile is one volume's file of one object in one pod: Path is where
// this process reads it (a container's root seen through /proc), Object
// indexes delayRun.Objects, Node names the group its delays count in.
type delayFile struct {
	Node   string
	Object int
	Path   string
}

// delayRun updates ConfigMaps (or Secrets) at random and measures how long
// each update takes to reach the files of the volumes that mount them.
type delayRun struct {
	Client    kubernetes.Interface
	Namespace string
	// Objects are the names of the ConfigMaps updated, each holding
	// delayValueKey = "0" when the run starts; Secrets when Secrets is set.
	Objects []string
	Secrets bool
	// Window is how long updates are sent; MeanGap the mean time between
	// two updates of one object.
	Window, MeanGap time.Duration
	// Poll is how often every file is read besides the reads inotify
	// prompts (delayMeter.watch): the resolution of a delay where inotify
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
func (r delayRun) Measure(ctx context.Context, files []delayFile) (map[string][]float64, map[string]float64, error) {
	m, err := r.measure(ctx, files)
	if err != nil {
		return nil, nil, err
	}
	return m.result(), m.notified(), nil
}

// measure is Measure, returning the meter with every arrival.
func (r delayRun) measure(ctx context.Context, files []delayFile) (*delayMeter, error) {
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
			if err := r.update(ctx, name, rand.New(rand.NewPCG(uint64(i), 120255)), window, func(sent time.Time) { m.sent(i, sent) }); err != nil {
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
func (r delayRun) update(ctx context.Context, name string, rng *rand.Rand, window *runWindow, sending func(time.Time)) error {
	for value := 1; ; value++ {
		time.Sleep(time.Duration(rng.ExpFloat64() * float64(r.MeanGap)))
		if window.endsBefore(time.Now()) {
			return nil
		}
		if err := r.set(ctx, name, strconv.Itoa(value), sending); err != nil {
			return err
		}
	}
}

// set reads the object and writes value as its delayValueKey, calling
// sending as the write leaves.
func (r delayRun) set(ctx context.Context, name, value string, sending func(time.Time)) error {
	if r.Secrets {
		secrets := r.Client.CoreV1().Secrets(r.Namespace)
		s, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Data[delayValueKey] = []byte(value)
		sending(time.Now())
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
		return err
	}
	configMaps := r.Client.CoreV1().ConfigMaps(r.Namespace)
	cm, err := configMaps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Data[delayValueKey] = value
	sending(time.Now())
	_, err = configMaps.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// sent counts the run's updates: each object's value is the number of its
// updates.
func (r delayRun) sent(t *testing.T) int {
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

// value is the object's delayValueKey.
func (r delayRun) value(ctx context.Context, name string) (string, error) {
	if r.Secrets {
		s, err := r.Client.CoreV1().Secrets(r.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return string(s.Data[delayValueKey]), nil
	}
	cm, err := r.Client.CoreV1().ConfigMaps(r.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return cm.Data[delayValueKey], nil
}

// checkUpdateDelays requires, for each node analyze reported, every
// measured delay within its predicted longest (to within one poll, the
// measurement's resolution) and the measured median within 25 % of the
// predicted median; it logs both and returns them as a table, one row
// per node, for the docs.
func checkUpdateDelays(t testing.TB, nodes []analyze.NodeResult, measured map[string][]float64, poll time.Duration) report.Table {
	t.Helper()
	table := report.Table{Header: []string{"node", "behaviour", "S", "T", "delays measured", "median", "predicted median", "longest", "predicted longest"}}
	for _, n := range nodes {
		delays := slices.Clone(measured[n.Name])
		if n.UpdateDelay == nil || len(delays) == 0 || n.SettingsSource != analyze.FromConfigz {
			t.Errorf("%s: predicted delay %v from %s settings, %d measured", n.Name, n.UpdateDelay, n.SettingsSource, len(delays))
			continue
		}
		slices.Sort(delays)
		median, longest := model.Quantile(delays, 0.5), delays[len(delays)-1]
		line := fmt.Sprintf("%s (%s, S = %gs, T = %gs): %d delays measured, median %.2f s, longest %.2f s; predicted median %.2f s, longest %.2f s",
			n.Name, n.Behaviour, n.SyncFrequencySeconds, n.TTLSeconds, len(delays), median, longest, n.UpdateDelay.Median, n.UpdateDelay.Max)
		t.Log(line)
		table.Rows = append(table.Rows, []string{n.Name, string(n.Behaviour), fmt.Sprintf("%g s", n.SyncFrequencySeconds), fmt.Sprintf("%g s", n.TTLSeconds),
			fmt.Sprint(len(delays)), fmt.Sprintf("%.2f s", median), fmt.Sprintf("%.2f s", n.UpdateDelay.Median),
			fmt.Sprintf("%.2f s", longest), fmt.Sprintf("%.2f s", n.UpdateDelay.Max)})
		if longest > n.UpdateDelay.Max+poll.Seconds() {
			t.Errorf("%s: an update took %.2f s, longer than the predicted longest %.2f s", n.Name, longest, n.UpdateDelay.Max)
		}
		if math.Abs(median-n.UpdateDelay.Median) > 0.25*n.UpdateDelay.Median {
			t.Errorf("%s: measured median %.2f s, more than 25 %% from the predicted %.2f s", n.Name, median, n.UpdateDelay.Median)
		}
	}
	return table
}
