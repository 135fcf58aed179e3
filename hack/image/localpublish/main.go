// Command localpublish stands in for a release's two publishing places on
// this machine, so that make release-check can publish a release and check
// what it published without the internet: an OCI registry (in memory,
// go-containerregistry's) under /v2/, and the files of --dir, if given,
// under every other path, as GitHub serves a release's assets. It listens
// on --address (127.0.0.1:0 chooses a free port), writes the address it
// listens on to --address-file if given, and serves until it is stopped.
// Without --dir it is the kind cluster's local registry
// (hack/kind/registry-image.sh), which TestInstallFromREADME pushes to.
//
//	go run ./localpublish --dir DIR --address-file FILE
//	localpublish --address :5000
package main

import (
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	dir := flag.String("dir", "", "the directory whose files are served, as a release's assets (none without it)")
	address := flag.String("address", "127.0.0.1:0", "where to listen")
	addressFile := flag.String("address-file", "", "a file to write the address listened on to")
	flag.Parse()
	listener, err := net.Listen("tcp", *address)
	if err != nil {
		log.Fatalf("localpublish: %v", err)
	}
	if *addressFile != "" {
		if err := os.WriteFile(*addressFile, []byte(listener.Addr().String()), 0o644); err != nil {
			log.Fatalf("localpublish: %v", err)
		}
	}
	images := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	files := http.NotFoundHandler()
	if *dir != "" {
		files = http.FileServer(http.Dir(*dir))
	}
	log.Fatal(http.Serve(listener, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v2/") || r.URL.Path == "/v2" {
			images.ServeHTTP(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})))
}
