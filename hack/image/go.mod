// Module image builds nodeagent's container image without a Docker daemon.
// It is separate from the main module so that go-containerregistry and its
// dependencies never enter the agent's. Run through `make image`.
module github.com/nodeagent-io/nodeagent/hack/image

go 1.26.0

require github.com/google/go-containerregistry v0.22.1

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
)
