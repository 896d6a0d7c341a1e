package server

import (
	"runtime"
	"runtime/debug"
)

// VersionInfo is the body of /version, in the form kubectl reads.
type VersionInfo struct {
	Major        string `json:"major"`
	Minor        string `json:"minor"`
	GitVersion   string `json:"gitVersion"`
	GitCommit    string `json:"gitCommit"`
	GitTreeState string `json:"gitTreeState"`
	BuildDate    string `json:"buildDate"`
	GoVersion    string `json:"goVersion"`
	Compiler     string `json:"compiler"`
	Platform     string `json:"platform"`
}

// DefaultVersion describes apikit itself, with the VCS data the Go toolchain
// stamped into the binary when there is any.
func DefaultVersion() VersionInfo {
	v := VersionInfo{
		Major: "0", Minor: "1", GitVersion: "v0.1.0", GitTreeState: "clean",
		BuildDate: "1970-01-01T00:00:00Z",
		GoVersion: runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.GitCommit = s.Value
			case "vcs.time":
				v.BuildDate = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					v.GitTreeState = "dirty"
				}
			}
		}
	}
	return v
}
