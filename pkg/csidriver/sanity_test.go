package csidriver

import (
	"path/filepath"
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

// TestSanity runs the CSI community's conformance suite, csi-sanity,
// against the driver's socket.
func TestSanity(t *testing.T) {
	h := newHarness(t)
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
	ginkgo.RunSpecs(t, "csi-sanity", suite, reporter)
	sc.Finalize()
	for spec, why := range skippedSanitySpecs {
		t.Logf("skipped %q: %s", spec, why)
	}
}
