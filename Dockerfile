# For people who build with Docker; `make image` builds the same image
# without a Docker daemon (hack/image).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# /nodeagent, the agent-only build every node runs: run, csi, webhook and version,
# without analyze, compare and convert (grpcnotrace: see AGENT_TAGS in the
# Makefile); /nodeagent-full, every command, which analyze --serve runs.
RUN CGO_ENABLED=0 go build -tags agentonly,grpcnotrace -trimpath -ldflags "-s -w" -o /nodeagent ./cmd/nodeagent && \
    CGO_ENABLED=0 go build -tags grpcnotrace -trimpath -ldflags "-s -w" -o /nodeagent-full ./cmd/nodeagent

FROM scratch
COPY --from=build /nodeagent /nodeagent-full /
LABEL org.opencontainers.image.title="nodeagent" \
      org.opencontainers.image.source="https://github.com/nodeagent-io/nodeagent"
# uid 0 with every capability dropped but CHOWN and FSETID, which applying a
# pod's fsGroup needs (deploy/base/daemonset.yaml): the root dir is a
# root-owned hostPath.
USER 0:0
ENTRYPOINT ["/nodeagent"]
CMD ["run"]
