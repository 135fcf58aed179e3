// Package cliflag holds pflag values that nodeagent's commands share.
package cliflag

import (
	"fmt"
	"strings"
)

// Choice is a pflag.Value for a typed string that takes one of a fixed set
// of values, in any case (`--configmap-strategy watch` is Watch), refusing
// any other when the flag is parsed. The value set is the choice's own
// spelling.
type Choice[T ~string] struct {
	value   *T
	choices []T
}

// NewChoice returns a Choice that sets *value to one of choices.
func NewChoice[T ~string](value *T, choices []T) *Choice[T] {
	return &Choice[T]{value: value, choices: choices}
}

func (c *Choice[T]) String() string { return string(*c.value) }
func (c *Choice[T]) Type() string   { return "string" }

func (c *Choice[T]) Set(s string) error {
	for _, v := range c.choices {
		if strings.EqualFold(string(v), s) {
			*c.value = v
			return nil
		}
	}
	return fmt.Errorf("unknown value %q; choose one of %v", s, c.choices)
}
