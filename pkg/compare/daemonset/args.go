package daemonset

import "strings"

// flagValue returns the value of --name in a container's args, in either
// of the forms pflag accepts (--name=value, --name value), and whether it
// is there. The last occurrence wins, as in pflag.
func flagValue(args []string, name string) (string, bool) {
	value, found := "", false
	for i := 0; i < len(args); i++ {
		switch {
		case strings.HasPrefix(args[i], "--"+name+"="):
			value, found = strings.TrimPrefix(args[i], "--"+name+"="), true
		case args[i] == "--"+name && i+1 < len(args):
			value, found = args[i+1], true
			i++
		}
	}
	return value, found
}

// withFlag returns a copy of args where --name has value: every existing
// occurrence is removed and --name=value appended, so that the result is
// the same whichever form the original used.
func withFlag(args []string, name, value string) []string {
	out := make([]string, 0, len(args)+1)
	for i := 0; i < len(args); i++ {
		switch {
		case strings.HasPrefix(args[i], "--"+name+"="):
		case args[i] == "--"+name && i+1 < len(args):
			i++
		default:
			out = append(out, args[i])
		}
	}
	return append(out, "--"+name+"="+value)
}
