package compare

import "testing"

func TestParsePodPhases(t *testing.T) {
	for _, p := range []PodPhases{PhasesMixed, PhasesTogether} {
		got, err := ParsePodPhases(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePodPhases(%q) = %v, %v", p.String(), got, err)
		}
	}
	if _, err := ParsePodPhases("random"); err == nil {
		t.Error("ParsePodPhases(random) succeeded")
	}
}
