package agent

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// Args writes what AddFlags reads: a Config survives the round trip, so
// the programs that start agents and the command agree on every flag.
func TestArgsRoundTrip(t *testing.T) {
	want := DefaultConfig()
	want.NodeName, want.RootDir, want.HTTPAddress = "node-1", "/tmp/x", ""
	want.Strategy, want.Invalidation, want.RemountOnChange = model.StrategyWatch, configmapcache.InvalidateEverySync, false
	want.KubeAPIQPS, want.KubeAPIBurst, want.ContentType = 12.5, 25, ContentTypeJSON
	want.EventQPS, want.EventBurst = 7.5, 15
	want.Profiling, want.VolumeUserFields = true, true

	var got Config
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	got.AddFlags(fs)
	if err := fs.Parse(want.Args()); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("after the round trip\n got %+v\nwant %+v", got, want)
	}
	// Every flag AddFlags binds is written by Flags.
	written := map[string]bool{}
	for _, f := range want.Flags() {
		written[f.Name] = true
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if !written[f.Name] {
			t.Errorf("--%s is bound but never written by Flags", f.Name)
		}
	})
}

func TestChoiceRefusesUnknownValues(t *testing.T) {
	cfg := DefaultConfig()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	cfg.AddFlags(fs)
	for _, arg := range []string{"--configmap-strategy=poll", "--cache-invalidation=never", "--kube-api-content-type=xml",
		"--feature-gates=SELinuxMount=true", "--feature-gates=AtomicWriteVolumeUserFields", "--feature-gates=AtomicWriteVolumeUserFields=yes please"} {
		if err := fs.Parse([]string{arg}); err == nil {
			t.Errorf("%s accepted", arg)
		}
	}
	if err := fs.Parse([]string{"--feature-gates= AtomicWriteVolumeUserFields=true ,"}); err != nil || !cfg.VolumeUserFields {
		t.Errorf("the gate on: %v, VolumeUserFields %v", err, cfg.VolumeUserFields)
	}
}
