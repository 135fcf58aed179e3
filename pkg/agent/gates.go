package agent

import (
	"fmt"
	"strconv"
	"strings"
)

// GateVolumeUserFields is the kubelet's feature gate for the owner fields
// of atomic volumes (KEP-5936): alpha and off in v1.37, beta and on from
// v1.38. With it on, the agent sets the files' owner from a volume's
// defaultUser and its items' user, as such a kubelet does.
const GateVolumeUserFields = "AtomicWriteVolumeUserFields"

// featureGates is --feature-gates as the kubelet spells it, NAME=BOOL
// pairs separated by commas, for the gates nodeagent knows: an unknown one
// is refused, as the kubelet refuses it.
type featureGates struct{ c *Config }

func (g featureGates) String() string {
	if g.c == nil {
		return ""
	}
	return GateVolumeUserFields + "=" + strconv.FormatBool(g.c.VolumeUserFields)
}

func (g featureGates) Set(value string) error {
	for _, pair := range strings.Split(value, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, raw, ok := strings.Cut(pair, "=")
		on, err := strconv.ParseBool(raw)
		if !ok || err != nil {
			return fmt.Errorf("%q is not NAME=true or NAME=false", pair)
		}
		if name != GateVolumeUserFields {
			return fmt.Errorf("unknown feature gate %q: nodeagent knows %s", name, GateVolumeUserFields)
		}
		g.c.VolumeUserFields = on
	}
	return nil
}

func (featureGates) Type() string { return "mapStringBool" }
