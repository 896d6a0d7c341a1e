#!/usr/bin/env bash
# The project's test command: what CI runs (.ci/run) and what to run before
# pushing. It needs only Go and the module proxy: test dependencies such as
# the etcd binary of the etcd3 backend's tests are built by the tests
# themselves (see internal/etcdtest).
set -euo pipefail
cd "$(dirname "$0")"

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== the build without the embedded etcd (-tags apikit_noembed)"
go vet -tags apikit_noembed ./storage/embedded ./storage/backend ./options ./examples/...
go test -count=1 -tags apikit_noembed -run NoEmbed ./storage/embedded ./options

echo "== unit and integration tests (race detector on)"
go test -race -count=1 ./...

if [ -d e2e ]; then
	echo "== end-to-end tests (kubectl and client-go against the built servers)"
	(cd e2e && go vet ./... && go test -count=1 -timeout 20m ./...)
fi
echo "== all tests passed"
