package csidriver

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// skippedSanitySpecs are the csi-sanity specs that cannot apply to a node
// plugin of inline ephemeral volumes, each with the reason. Every other
// spec runs and must pass (docs/csi.md, "Conformance").
var skippedSanitySpecs = map[string]string{
	`\[Controller Server\]`:                "the Controller service's specs: the driver has none and claims no CONTROLLER_SERVICE capability (an inline ephemeral volume needs no controller)",
	`\[GroupController Server\]`:           "the GroupController service's specs: the driver has none (no snapshots)",
	`GroupController VolumeGroupSnapshots`: "the GroupController service's specs: the driver has none (no snapshots)",
	"should remove target path":            "creates its volume with the Controller service's CreateVolume, which a driver of ephemeral volumes has not (the kubelet's publish call creates the volume); TestPublishUpdateUnpublish checks that unpublish removes the target path",
}

// sanityModeEnv names the mode a re-run of the test binary checks: Ginkgo
// runs one suite per process, so each mode after the first runs in a
// process of its own.
const sanityModeEnv = "NODEAGENT_SANITY_MODE"

// The driver's modes csi-sanity checks: reading as the pods (the default),
// as itself, and the Secrets mode (which mounts: root only).
var sanityModes = []string{"pod", "driver", "secrets"}

// TestSanity runs the CSI community's conformance suite, csi-sanity,
// against the driver's socket, in each of its modes.
func TestSanity(t *testing.T) {
	mode := os.Getenv(sanityModeEnv)
	if mode != "" {
		runSanity(t, mode)
		return
	}
	runSanity(t, sanityModes[0])
	for _, mode := range sanityModes[1:] {
		t.Run(mode, func(t *testing.T) {
			if mode == "secrets" && os.Geteuid() != 0 {
				t.Skip("the Secrets mode mounts a tmpfs per volume: run as root")
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestSanity$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), sanityModeEnv+"="+mode)
			out, err := cmd.CombinedOutput()
			ran := regexp.MustCompile(`Ran ([1-9][0-9]*) of [0-9]+ Specs`).FindSubmatch(out)
			if err != nil || ran == nil {
				t.Fatalf("csi-sanity in the %s mode: %v\n%s", mode, err, out)
			}
			t.Logf("csi-sanity in the %s mode: %s specs passed", mode, ran[1])
		})
	}
}

// runSanity runs csi-sanity against a driver in mode.
func runSanity(t *testing.T, mode string) {
	var h *harness
	switch mode {
	case "pod":
		h = newHarnessAs(t, newAuthorizer())
	case "driver":
		h = newHarness(t)
	case "secrets":
		h = newSecretsHarness(t, newAuthorizer())
	default:
		t.Fatalf("%s=%q: want one of %v", sanityModeEnv, mode, sanityModes)
	}
	config := sanity.NewTestConfig()
	config.Address = "unix://" + h.socket
	config.TargetPath = filepath.Join(filepath.Dir(h.socket), "sanity-target")
	config.StagingPath = filepath.Join(filepath.Dir(h.socket), "sanity-staging")
	config.IdempotentCount = 2
	suite, reporter := ginkgo.GinkgoConfiguration()
	for spec := range skippedSanitySpecs {
		suite.SkipStrings = append(suite.SkipStrings, spec)
	}
	reporter.Verbose = testing.Verbose()
	sc := sanity.GinkgoTest(&config)
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, "csi-sanity ("+mode+")", suite, reporter)
	sc.Finalize()
	for spec, why := range skippedSanitySpecs {
		t.Logf("skipped %q: %s", spec, why)
	}
}
