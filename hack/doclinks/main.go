// Command doclinks fails when a relative link or anchor of the Markdown
// files it is given, or a URL of the project's own files in any of them,
// leads nowhere (internal/doclinks). `make verify` runs it from the
// repository's root on every tracked Markdown, YAML and Go file.
//
//	go run ./hack/doclinks $(git ls-files '*.md' '*.yaml' '*.go')
package main

import (
	"fmt"
	"os"

	"github.com/nodeagent-io/nodeagent/internal/doclinks"
)

func main() {
	broken, err := doclinks.Check(".", os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "doclinks:", err)
		os.Exit(2)
	}
	for _, b := range broken {
		fmt.Println(b)
	}
	if len(broken) > 0 {
		fmt.Printf("doclinks: %d links lead nowhere\n", len(broken))
		os.Exit(1)
	}
}
