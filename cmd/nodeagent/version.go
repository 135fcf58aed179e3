package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/nodeagent-io/nodeagent/internal/version"
)

func runVersion(args []string, stdout io.Writer) error {
	fs := newFlagSet("version", "Print the version, git commit and Go version of this binary.", stdout)
	output := fs.StringP("output", "o", "text", "Output format: text or json.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	info := version.Get()
	switch *output {
	case "text":
		_, err := fmt.Fprintln(stdout, info.String())
		return err
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	default:
		return fmt.Errorf("unknown --output %q: use text or json", *output)
	}
}
