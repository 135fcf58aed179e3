// Package version reports which nodeagent binary is running.
//
// The Makefile stamps Version and GitCommit through -ldflags -X. A binary
// built without them (go build, go install) falls back to what the Go
// toolchain recorded in the binary's build information, so `nodeagent
// version` never prints an empty commit when one is knowable.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the linker: -X github.com/nodeagent-io/nodeagent/internal/version.Version=...
var (
	Version   = unstamped
	GitCommit = ""
)

// unstamped is Version when the linker set none.
const unstamped = "v0.0.0-dev"

// Info is what `nodeagent version` prints. The JSON keys are stable.
type Info struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the running binary's version information.
func Get() Info {
	info := Info{
		Version:   Version,
		GitCommit: GitCommit,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if info.Version == unstamped {
		info.Version = moduleVersion(info.Version)
	}
	if info.GitCommit == "" {
		info.GitCommit = commitFromBuildInfo()
	}
	if info.GitCommit == "" {
		info.GitCommit = "unknown"
	}
	return info
}

// String is the one-line form used in logs and by `nodeagent version`.
func (i Info) String() string {
	return fmt.Sprintf("nodeagent %s (commit %s, %s, %s)", i.Version, i.GitCommit, i.GoVersion, i.Platform)
}

// moduleVersion is the version of the module the binary was built from, as
// `go install github.com/nodeagent-io/nodeagent/cmd/nodeagent@v1.2.3`
// records it, or fallback where the build was not of a released module.
func moduleVersion(fallback string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		return fallback
	}
	return bi.Main.Version
}

func commitFromBuildInfo() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var revision, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision != "" && modified == "true" {
		revision += "-dirty"
	}
	return revision
}
