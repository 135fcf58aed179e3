package cliflag

import (
	"strings"
	"testing"
)

type strategy string

// A choice takes its values in any case and keeps its own spelling; it
// refuses anything else, naming the choices.
func TestChoiceTakesAnyCase(t *testing.T) {
	var v strategy
	c := NewChoice(&v, []strategy{"Watch", "Cache", "Get"})
	for _, in := range []string{"Cache", "cache", "CACHE"} {
		v = ""
		if err := c.Set(in); err != nil || v != "Cache" {
			t.Errorf("Set(%q): %q, %v; want Cache", in, v, err)
		}
	}
	if err := c.Set("poll"); err == nil || !strings.Contains(err.Error(), "choose one of [Watch Cache Get]") {
		t.Errorf("Set(poll): %v, want an error naming the choices", err)
	}
}
