# mcpq: one static binary (frontend, worker, dev and admin commands).
#   docker build -t mcpq .
#   docker run --rm -e REDIS_URL=redis://redis:6379/0 -p 8080:8080 mcpq frontend
# Build stage: scripts/build-static holds the build flags; scripts/test runs
# the same script, so the binary tested is the binary shipped.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN ./scripts/build-static /out/mcpq

# Run stage: no shell, no libc, no root. Workers that run command tools
# (--tools, docs/tools.md) need their interpreters: build FROM an image
# that has them instead, keeping USER non-root.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/mcpq /usr/local/bin/mcpq
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/mcpq"]
CMD ["frontend"]
