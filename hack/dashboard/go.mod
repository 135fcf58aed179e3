// Module dashboard generates deploy/grafana/nodeagent.json with the Grafana
// Foundation SDK (Apache 2.0). It is separate from the main module so that
// the SDK never enters the agent's dependencies. Run through `make dashboard`.
module github.com/nodeagent-io/nodeagent/hack/dashboard

go 1.26.0

require github.com/grafana/grafana-foundation-sdk/go v0.0.22
