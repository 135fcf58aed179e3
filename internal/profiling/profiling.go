// Package profiling serves Go's profiles (net/http/pprof) under
// /debug/pprof/ on a mux of the caller's, for the commands that offer them
// behind a flag (the agent's --profiling, analyze --serve's): plain HTTP
// with no authentication, so never by default.
package profiling

import (
	"net/http"
	"net/http/pprof"
)

// Handle adds /debug/pprof/ and its profiles to mux.
func Handle(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}
