// Command capdrop-runc is an OCI runtime that hands every call to runc, after
// removing from the container's spec the capabilities that this machine's
// capability bounding set does not hold.
//
// Some sandboxes (this project's CI machines among them) run everything with a
// bounding set that lacks a capability, such as CAP_SYS_RESOURCE. runc then
// refuses every privileged container ("unable to apply caps: operation not
// permitted"), because a privileged spec asks for all of them, and kind's node
// containers and kube-proxy are privileged. No process on such a machine can
// hold the missing capabilities anyway, so dropping them from the spec changes
// nothing the container could have done.
//
// Register it with dockerd (--add-runtime capdrop=/path/capdrop-runc
// --default-runtime=capdrop) or with containerd (the runc runtime's
// BinaryName option). Where the bounding set is full it changes nothing. The
// real runc is the first `runc` on PATH, or $CAPDROP_RUNC.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	runc, err := realRunc()
	if err != nil {
		fail(err)
	}
	if spec, process, ok := specOf(os.Args[1:]); ok {
		if err := dropMissingCapabilities(spec, process); err != nil {
			fail(err)
		}
	}
	argv := append([]string{"runc"}, os.Args[1:]...)
	fail(syscall.Exec(runc, argv, os.Environ()))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "capdrop-runc:", err)
	os.Exit(1)
}

// realRunc finds the runc to hand calls to, never this program itself.
func realRunc() (string, error) {
	if p := os.Getenv("CAPDROP_RUNC"); p != "" {
		return p, nil
	}
	self, _ := os.Executable()
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, "runc")
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			if resolved, _ := filepath.EvalSymlinks(p); resolved != self {
				return p, nil
			}
		}
	}
	for _, p := range []string{"/usr/sbin/runc", "/usr/bin/runc", "/usr/local/sbin/runc"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no runc found on PATH; set CAPDROP_RUNC")
}

// specOf finds the JSON that holds the capabilities of a runc call: the
// bundle's config.json for `create` and `run` (the bundle is --bundle/-b,
// or the working directory, runc's default), and the --process/-p file for
// `exec` (`docker exec --privileged` asks for every capability too). process
// says whether the file is a bare process rather than a whole spec.
func specOf(args []string) (path string, process bool, ok bool) {
	command, bundle, processFile := "", "", ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--bundle" || a == "-b" || a == "--process" || a == "-p":
			if i+1 < len(args) {
				if a == "--bundle" || a == "-b" {
					bundle = args[i+1]
				} else {
					processFile = args[i+1]
				}
				i++
			}
		case strings.HasPrefix(a, "--bundle="):
			bundle = strings.TrimPrefix(a, "--bundle=")
		case strings.HasPrefix(a, "--process="):
			processFile = strings.TrimPrefix(a, "--process=")
		case command == "" && !strings.HasPrefix(a, "-"):
			if i > 0 && takesValue(args[i-1]) {
				continue
			}
			command = a
		}
	}
	switch command {
	case "create", "run":
		if bundle == "" {
			bundle = "."
		}
		return filepath.Join(bundle, "config.json"), false, true
	case "exec":
		return processFile, true, processFile != ""
	}
	return "", false, false
}

// takesValue reports whether a global runc flag is followed by its value.
func takesValue(flag string) bool {
	switch flag {
	case "--root", "--log", "--log-format", "--criu", "--rootless":
		return true
	}
	return false
}

func dropMissingCapabilities(path string, bareProcess bool) error {
	bounding, err := boundingSet()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]any
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	process := spec
	if !bareProcess {
		process, _ = spec["process"].(map[string]any)
	}
	caps, _ := process["capabilities"].(map[string]any)
	if caps == nil {
		return nil
	}
	changed := false
	for set, list := range caps {
		names, _ := list.([]any)
		kept := names[:0:0]
		for _, n := range names {
			if s, ok := n.(string); ok && !bounding[s] && known(s) {
				changed = true
				continue
			}
			kept = append(kept, n)
		}
		caps[set] = kept
	}
	if !changed {
		return nil
	}
	out, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	tmp := path + ".capdrop"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// boundingSet reads this process's capability bounding set by name.
func boundingSet() (map[string]bool, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("CapBnd %q: %w", hex, err)
			}
			held := map[string]bool{}
			for bit, name := range capabilityNames {
				if mask&(1<<bit) != 0 {
					held[name] = true
				}
			}
			return held, nil
		}
	}
	return nil, fmt.Errorf("no CapBnd line in /proc/self/status")
}

func known(name string) bool {
	for _, n := range capabilityNames {
		if n == name {
			return true
		}
	}
	return false
}

// capabilityNames are Linux's capabilities by bit number (linux/capability.h).
// A capability the kernel is newer than this list for is left in the spec.
var capabilityNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE",
	"CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT",
	"CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
	"CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
}
