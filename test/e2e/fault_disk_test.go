//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/internal/testutil"
)

// diskFault is one way the agent's disk can fail under it.
type diskFault struct {
	name string
	// inject breaks the disk under root, where victim is the victim
	// volume's directory, and returns what lifts the fault.
	inject func(t *testing.T, root, victim string) (lift func())
	// errorText is in the victim's FailedMount event and /debug/volumes.
	errorText string
	// bystanderWrites: the volume beside the victim that reads the same
	// ConfigMap still takes the update during the fault.
	bystanderWrites bool
}

var diskFaults = []diskFault{
	{
		name: "disk full (ENOSPC mid-write)",
		inject: func(t *testing.T, root, _ string) func() {
			var st syscall.Statfs_t
			if err := syscall.Statfs(root, &st); err != nil {
				t.Fatal(err)
			}
			// Leave room for a few small files, not for a new generation
			// of the 768 KiB ConfigMap: its write fails part-way through.
			free := int64(st.Bavail) * st.Bsize
			filler := filepath.Join(root, "filler")
			if err := os.WriteFile(filler, make([]byte, free-256<<10), 0o600); err != nil {
				t.Fatal(err)
			}
			return func() { os.Remove(filler) }
		},
		errorText: "no space left on device",
	},
	{
		name: "file system remounted read-only",
		inject: func(t *testing.T, root, _ string) func() {
			remount(t, root, "ro")
			return func() { remount(t, root, "rw") }
		},
		errorText: "read-only file system",
	},
	{
		name: "volume directory's permissions taken away",
		inject: func(t *testing.T, _, victim string) func() {
			// Another owner, and no write permission: the agent, with the
			// DaemonSet's capabilities only, can neither write nor chmod.
			if err := os.Chown(victim, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(victim, 0o555); err != nil {
				t.Fatal(err)
			}
			return func() {
				os.Chown(victim, 0, 0)
				os.Chmod(victim, 0o777)
			}
		},
		errorText:       "operation not permitted",
		bystanderWrites: true,
	},
}

func remount(t *testing.T, dir, mode string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,"+mode, dir).CombinedOutput(); err != nil {
		t.Fatalf("remounting %s %s: %v: %s", dir, mode, err, out)
	}
}

// TestDiskFaults puts the agent's root dir on a small tmpfs and breaks it
// under a ConfigMap update: the volume's old content stays whole and
// readable throughout, the error is a FailedMount event on that volume and
// in /debug/volumes, the other volumes carry on, and all converge once the
// fault is lifted, with no debris left.
func TestDiskFaults(t *testing.T) {
	requireRoot(t, "mounting a tmpfs and changing file ownership")
	wrapper := daemonSetCapabilities(t)
	for i, fault := range diskFaults {
		t.Run(fault.name, func(t *testing.T) {
			root := mountTmpfs(t, 8<<20)
			ns := createNamespace(t, "disk")
			node := fmt.Sprintf("node-disk-%d", i)
			createNode(t, node, 2)
			const keys, size = 6, 128 << 10
			createConfigMap(t, ns, "data", generationData(1, keys, size))
			createConfigMap(t, ns, "small", generationData(1, 2, 100))
			a := startAgentOpts(t, agentOptions{node: node, rootDir: root, wrapper: wrapper,
				args: []string{"--configmap-strategy=Watch", "--sync-frequency=2s"}})
			victim := createPod(t, ns, "victim", node, volume{name: "cfg", configMap: "data"})
			bystander := createPod(t, ns, "bystander", node, volume{name: "cfg", configMap: "data"})
			side := createPod(t, ns, "side", node, volume{name: "cfg", configMap: "small"})
			dirs := map[*corev1.Pod]string{}
			files := map[*corev1.Pod][]string{victim: keyNames(keys), bystander: keyNames(keys), side: keyNames(2)}
			for _, p := range []*corev1.Pod{victim, bystander, side} {
				dirs[p] = a.volumePath(p, "cfg", "")
				waitForGeneration(t, dirs[p], 1, 30*time.Second)
				// The first write makes ..data before the files' links: the
				// fault must not come between the two.
				waitForFiles(t, dirs[p], files[p])
			}
			reader := startReader(map[string][]string{dirs[victim]: files[victim], dirs[bystander]: files[bystander], dirs[side]: files[side]})

			lift := fault.inject(t, root, dirs[victim])
			updateData(t, ns, "data", generationData(2, keys, size))
			updateData(t, ns, "small", generationData(2, 2, 100))

			// The error, on the victim's volume, in an event and in
			// /debug/volumes.
			testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
				events := strings.Join(podEvents(t, ns, "victim", "FailedMount"), "\n")
				if !strings.Contains(events, `volume "cfg"`) || !strings.Contains(events, fault.errorText) {
					return fmt.Errorf("no FailedMount event for volume cfg with %q: %q", fault.errorText, events)
				}
				volumes, err := a.debugVolumes()
				if err != nil {
					return err
				}
				for _, v := range volumes {
					if v.Pod == ns+"/victim" && v.Volume == "cfg" && strings.Contains(v.LastError, fault.errorText) {
						return nil
					}
				}
				return fmt.Errorf("/debug/volumes shows no %q for the victim: %+v", fault.errorText, volumes)
			})
			// The others carry on where the disk lets them; the victim keeps
			// its old content.
			if fault.bystanderWrites {
				waitForGeneration(t, dirs[bystander], 2, 30*time.Second)
				waitForGeneration(t, dirs[side], 2, 30*time.Second)
			}
			if fault.name == diskFaults[0].name {
				waitForGeneration(t, dirs[side], 2, 30*time.Second) // small files still fit
			}
			time.Sleep(3 * time.Second) // several retries, with the fault in place
			if gen, err := volumeGeneration(dirs[victim]); gen != 1 || err != nil {
				t.Errorf("during the fault the victim's volume holds generation %d (%v), want 1, whole", gen, err)
			}

			lift()
			lifted := time.Now()
			for _, dir := range dirs {
				waitForGeneration(t, dir, 2, 3*time.Minute)
			}
			recovery := time.Since(lifted)
			stats := reader.stop()
			for _, p := range stats.Problems {
				t.Errorf("reader: %s", p)
			}
			for p, dir := range dirs {
				if extra, err := leftovers(dir); err != nil || len(extra) > 0 {
					t.Errorf("pod %s: debris left in its volume: %v %v", p.Name, extra, err)
				}
			}
			if _, err := os.Stat(filepath.Join(root, "filler")); err == nil {
				t.Error("the filler is still there")
			}
			recordReliability(t, reliabilityRow{Fault: fault.name, Strategy: "watch", Reads: stats, DataLost: stats.Lost(),
				Recovery: recovery, Requests: "n/a (a disk fault)"})
		})
	}
}

func keyNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("key-%02d", i)
	}
	return names
}

// waitForFiles waits until each of names is in dir, as a container sees
// it (through its link to ..data).
func waitForFiles(t *testing.T, dir string, names []string) {
	t.Helper()
	testutil.Eventually(t, pollInterval, 30*time.Second, func() error {
		for _, name := range names {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
		return nil
	})
}

// waitForGeneration waits until the volume in dir holds generation gen,
// whole.
func waitForGeneration(t *testing.T, dir string, gen int, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, pollInterval, timeout, func() error {
		got, err := volumeGeneration(dir)
		if err != nil {
			return err
		}
		if got != gen {
			return fmt.Errorf("%s holds generation %d, want %d", dir, got, gen)
		}
		return nil
	})
}
