// Command nodeagent is a kubelet-like node agent for ConfigMap volumes, and
// the tool that measures how such agents load the apiserver.
//
// Usage:
//
//	nodeagent <command> [flags]
//
// Each command owns a pflag.FlagSet; `nodeagent <command> --help` lists it.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// command is one subcommand of nodeagent.
type command struct {
	summary string
	// run parses args with its own flag set and does the work. Output goes
	// to stdout; a returned error is printed once by main.
	run func(args []string, stdout io.Writer) error
}

// commands are this build's: every build has run, csi, webhook, uninstall-check and version, the full
// build (commands_full.go) adds analyze and compare.
var commands = map[string]command{
	"run":             {summary: "Run the node agent for one node", run: runAgent},
	"csi":             {summary: "Serve pods' ConfigMap volumes as a CSI driver, updated within a second", run: runCSI},
	"uninstall-check": {summary: "Fail, naming them, while any pod uses the CSI driver (run before uninstalling it)", run: runUninstallCheck},
	"version":         {summary: "Print the version of this binary", run: runVersion},
	"webhook":         {summary: "Serve the opt-in admission webhook that moves new pods' ConfigMap volumes to the CSI driver", run: runWebhook},
}

// leftOut names the commands this build leaves out (commands_agentonly.go).
var leftOut []string

func main() {
	invokedAs = programName(os.Args[0])
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// invokedAs is how help and errors name the program: "kubectl nodeagent"
// when kubectl runs it as its plugin kubectl-nodeagent.
var invokedAs = "nodeagent"

// programName is the name a user typed to run argv0: kubectl finds a
// plugin named kubectl-<name> on PATH and runs it for `kubectl <name>`.
func programName(argv0 string) string {
	if name, ok := strings.CutPrefix(filepath.Base(argv0), "kubectl-"); ok {
		return "kubectl " + name
	}
	return "nodeagent"
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok && slices.Contains(leftOut, args[0]) {
		fmt.Fprintf(stderr, "%s: %q is not in this agent-only build (the image's); the full binary has it: make build, or go install -tags grpcnotrace ./cmd/nodeagent\n", invokedAs, args[0])
		return 2
	}
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n", invokedAs, args[0])
		usage(stderr)
		return 2
	}
	if err := cmd.run(args[1:], stdout); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s %s: %v\n", invokedAs, args[0], err)
		var coded exitError
		if errors.As(err, &coded) {
			return coded.code
		}
		return 1
	}
	return 0
}

// exitError is a command's outcome that is not a failure of the command
// but has an exit code of its own (analyze --fail-on's 3).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func usage(w io.Writer) {
	fmt.Fprintln(w, "nodeagent keeps pods' ConfigMap volumes on a node's disk the way the kubelet does,")
	if len(leftOut) == 0 {
		fmt.Fprintln(w, "and measures the ConfigMap GET load such agents put on the apiserver and etcd.")
	} else {
		fmt.Fprintf(w, "This is its agent-only build, without %s and %s.\n", strings.Join(leftOut[:len(leftOut)-1], ", "), leftOut[len(leftOut)-1])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Usage:\n  %s <command> [flags]\n\nCommands:\n", invokedAs)
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-16s %s\n", name, commands[name].summary)
	}
	fmt.Fprintf(w, "\nRun '%s <command> --help' for the flags of a command.\n", invokedAs)
}

// newFlagSet returns a flag set that prints a usage line naming the command
// and reports parse errors instead of exiting, so main prints them once.
func newFlagSet(name, synopsis string, out io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "%s\n\nUsage:\n  %s %s [flags]\n\nFlags:\n%s", synopsis, invokedAs, name, fs.FlagUsages())
	}
	return fs
}
