package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nodeagent-io/nodeagent/internal/daemon"
	"github.com/nodeagent-io/nodeagent/pkg/coreclient"
	"github.com/nodeagent-io/nodeagent/pkg/csidriver"
	"github.com/nodeagent-io/nodeagent/pkg/driverpods"
)

// uninstallCheckTimeout bounds the pods' list: the chart's pre-delete hook
// runs this, and a hung apiserver must fail the uninstall, not hang it.
const uninstallCheckTimeout = 2 * time.Minute

// runUninstallCheck fails, naming them, while any pod needs the CSI
// driver: uninstalling it then would strand them. The chart runs it as its
// pre-delete hook in the csi mode; a kustomize user runs it before kubectl
// delete -k.
func runUninstallCheck(args []string, stdout io.Writer) error {
	fs := newFlagSet("uninstall-check", "Fail, naming them, while any pod uses the CSI driver's volumes: uninstalling the driver\n"+
		"then would leave those pods unable to stop. Run it before removing the driver (the chart's pre-delete hook does).", stdout)
	kubeconfig := fs.String("kubeconfig", "", kubeconfigHelp)
	kubeContext := fs.String("context", "", "The kubeconfig context to use. Empty: its current context.")
	driver := fs.String("driver-name", csidriver.DefaultDriverName, "The CSI driver's name, as pods write it in volumes[].csi.driver.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	config, err := daemon.RESTConfig(*kubeconfig, *kubeContext)
	if err != nil {
		return err
	}
	client, err := coreclient.NewForConfig(config)
	if err != nil {
		return err
	}
	ctx, cancel := daemon.SignalContext()
	defer cancel()
	ctx, cancelList := context.WithTimeout(ctx, uninstallCheckTimeout)
	defer cancelList()
	if err := driverpods.Check(ctx, client.Pods(""), *driver); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "No pod uses the CSI driver %s: it can be uninstalled.\n", *driver)
	return err
}
