package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/nodeagent-io/nodeagent/internal/controlplane"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cp, err := controlplane.Start(ctx, controlplane.Options{BinDir: "/work/main/_output/bin", Dir: "/tmp/cp"})
	if err != nil {
		panic(err)
	}
	defer cp.Stop()
	for _, n := range []string{"node-a", "node-b"} {
		cfg, err := cp.NodeRESTConfig(n)
		if err != nil {
			panic(err)
		}
		if err := controlplane.WriteKubeconfig("/tmp/cp/"+n+".kubeconfig", cfg); err != nil {
			panic(err)
		}
	}
	fmt.Println("ready", cp.KubeconfigPath)
	<-ctx.Done()
}
