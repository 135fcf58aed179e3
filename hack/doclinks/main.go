// Command doclinks fails when a relative link or anchor of the Markdown
// files it is given leads nowhere (internal/doclinks). `make verify` runs it
// on every tracked Markdown file.
//
//	go run ./hack/doclinks $(git ls-files '*.md')
package main

import (
	"fmt"
	"os"

	"github.com/nodeagent-io/nodeagent/internal/doclinks"
)

func main() {
	broken, err := doclinks.Check(os.Args[1:])
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
