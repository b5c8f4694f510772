#!/usr/bin/env bash
# Build SeaweedFS's `weed` (an S3 server in Go: master, volume, filer and S3 gateway in one process),
# `python -m bench reference`'s S3 server, from the Go module proxy by version, once per machine
# (about 10 minutes on 2 cores; ~230 MB), into ~/.cache/lakefs-gc/seaweedfs-<version>/, linked as
# .tools/bin/weed. The bench runs this itself when the binary is missing; not part of `make test`.
# `go install` refuses the module (its go.mod has replace directives), so it is built in a copy.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}
TOOLS=$PWD/.tools
TOOLS_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/lakefs-gc
dir=$TOOLS_CACHE/seaweedfs-$VERSION
if [ ! -x "$dir/weed" ]; then
  command -v go >/dev/null 2>&1 || { echo "seaweedfs: go not found: install Go 1.26+ and re-run" >&2; exit 1; }
  echo "seaweedfs: building SeaweedFS $VERSION from the Go module proxy into $dir (once per machine, about 10 minutes)" >&2
  src=$(go mod download -json "github.com/seaweedfs/seaweedfs@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] && [ -d "$src/weed" ] || { echo "seaweedfs: go mod download gave no weed/ directory" >&2; exit 1; }
  mkdir -p "$TOOLS_CACHE"
  tmp=$(mktemp -d "$TOOLS_CACHE/seaweedfs-build.XXXXXX")
  trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
  cp -R "$src" "$tmp/src" && chmod -R u+w "$tmp/src"
  (cd "$tmp/src" && go build -buildvcs=false -trimpath -o "$tmp/weed" ./weed)
  mkdir -p "$dir" && mv "$tmp/weed" "$dir/weed"
fi
mkdir -p "$TOOLS/bin" && ln -sfn "$dir/weed" "$TOOLS/bin/weed"
echo "$TOOLS/bin/weed"
