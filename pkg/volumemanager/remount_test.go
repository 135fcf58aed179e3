package volumemanager

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// countWrites counts the set-ups that went to the atomic writer.
func countWrites(t *testing.T) *int {
	n := new(int)
	saved := writeVolume
	writeVolume = func(dir string, payload map[string]atomicwriter.FileProjection, setPerms func() error) (bool, error) {
		*n++
		return saved(dir, payload, setPerms)
	}
	t.Cleanup(func() { writeVolume = saved })
	return n
}

// A remount that finds the same payload and an intact stamp leaves the
// disk alone; a change of the ConfigMap, a file edited by hand or a volume
// removed by hand takes the full path, which writes or repairs it.
func TestUnchangedRemountSkipsTheDisk(t *testing.T) {
	h := newHarness(t)
	// Later than any ctime the test makes, so that no stamp is racy.
	h.clock.SetTime(time.Now().Add(time.Minute))
	writes := countWrites(t)
	h.cms.set("cfg", map[string]string{"a": "1"})
	pod := newPod("p", volumeSpec{name: "v", configMap: "cfg"})
	dir := VolumeDir(h.root, "p", PluginConfigMap, "v")
	step := func(what string, wantWrites int, want string) {
		t.Helper()
		h.sync(pod)
		if *writes != wantWrites {
			t.Errorf("%s: %d calls of the writer so far, want %d", what, *writes, wantWrites)
		}
		h.mustRead(pod, "v", "a", want)
	}

	step("first mount", 1, "1")
	step("unchanged remount", 1, "1")
	step("unchanged remount", 1, "1")

	h.cms.set("cfg", map[string]string{"a": "2"})
	step("remount of a new version", 2, "2")
	step("unchanged remount", 2, "2")

	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("edited by hand"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("remount after an edit by hand", 3, "2")
	step("unchanged remount", 3, "2")

	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	step("remount after the volume was removed", 4, "2")
	step("unchanged remount", 4, "2")
}
