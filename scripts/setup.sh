#!/usr/bin/env bash
# Idempotent set-up: checks Java 17+, installs the apt tools the tests use, creates .venv with the
# pinned requirements and the project package (editable), and builds the --py-files zip for Spark
# (build/lakefs_gc.zip, for running a job by hand), and builds lakeFS itself once per machine.
# A second run only checks stamps and takes a second or two.
#
#   scripts/setup.sh           what `make demo`, `make airflow` and the rest need: no Docker
#   scripts/setup.sh --stack   also the compose stack's tools and images (`make test`: the stack's
#                              test), which starts the project's Docker engine (scripts/dockerd.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
STACK=
for arg in "$@"; do
  case "$arg" in
    --stack) STACK=1 ;;
    *) echo "setup: unknown option $arg (usage: scripts/setup.sh [--stack])" >&2; exit 2 ;;
  esac
done
ROOT=$PWD
VENV=$ROOT/.venv
PY=${PYTHON:-python3}

die() { echo "setup: $*" >&2; exit 1; }

# --- Java 17+ (Spark 4 needs it) ---
command -v java >/dev/null 2>&1 || die "java not found. Install OpenJDK 17 or newer (Debian: apt-get install openjdk-17-jre-headless) and re-run."
jver=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)
[ -n "$jver" ] && [ "$jver" -ge 17 ] || die "java $jver found, but Spark 4 needs Java 17 or newer. Install OpenJDK 17+ and put it first on PATH."

# --- lakeFS itself (the tests' judge), built once per machine from the Go module proxy by version,
#     never from copied source: `go mod download` gives the module (verified by the Go checksum
#     database), a throwaway writable copy gets a placeholder web UI (lakeFS embeds webui/dist, empty
#     in the module; the GC needs only the API) and `go build ./cmd/lakefs` with the version stamped
#     as lakeFS's Makefile does. It builds in the background while the venv installs (it is CPU, the
#     venv mostly network); the copy is removed, only the binary is kept under ~/.cache/lakefs-gc/. ---
LAKEFS_VERSION=1.84.0
TOOLS=$ROOT/.tools
TOOLS_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/lakefs-gc
mkdir -p "$TOOLS/bin" "$TOOLS_CACHE"
lk=$TOOLS_CACHE/lakefs-$LAKEFS_VERSION
lk_pid=
# lakeFS's REST API specification, the contract the tests hold the emulator to: api/swagger.yml of the
# same module (the one lakefs-sdk is generated from), kept beside the binary, linked into .tools/
if [ ! -f "$lk/swagger.yml" ]; then
  command -v go >/dev/null 2>&1 || die "go not found: install Go 1.24+ (lakeFS $LAKEFS_VERSION and fake-gcs-server are built with it), and re-run"
  src=$(go mod download -json "github.com/treeverse/lakefs@v$LAKEFS_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] && [ -f "$src/api/swagger.yml" ] || die "go mod download github.com/treeverse/lakefs@v$LAKEFS_VERSION gave no api/swagger.yml"
  mkdir -p "$lk" && cp "$src/api/swagger.yml" "$lk/swagger.yml.tmp" && chmod u+w "$lk/swagger.yml.tmp" \
    && mv "$lk/swagger.yml.tmp" "$lk/swagger.yml"
fi
ln -sfn "$lk/swagger.yml" "$TOOLS/lakefs-swagger.yml"
if [ ! -x "$lk/lakefs" ]; then
  command -v go >/dev/null 2>&1 || die "go not found: install Go 1.24+ (lakeFS $LAKEFS_VERSION and fake-gcs-server are built with it), and re-run"
  echo "setup: building lakeFS $LAKEFS_VERSION from the Go module proxy into $lk (once per machine, about 5 minutes; log: $TOOLS_CACHE/lakefs-build.log)"
  (
    set -euo pipefail
    src=$(go mod download -json "github.com/treeverse/lakefs@v$LAKEFS_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$src" ] && [ -f "$src/go.mod" ] || { echo "go mod download gave no module directory"; exit 1; }
    tmp=$(mktemp -d "$TOOLS_CACHE/lakefs-build.XXXXXX")
    trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
    cp -R "$src" "$tmp/src" && chmod -R u+w "$tmp/src"
    printf '<!doctype html><title>lakeFS %s</title><p>lakeFS %s built for the GC tests: API only, no web UI.</p>\n' \
      "$LAKEFS_VERSION" "$LAKEFS_VERSION" > "$tmp/src/webui/dist/index.html"
    (cd "$tmp/src" && go build -buildvcs=false -trimpath -o "$tmp/lakefs" \
      -ldflags "-X github.com/treeverse/lakefs/pkg/version.Version=$LAKEFS_VERSION" ./cmd/lakefs)
    "$tmp/lakefs" --version | grep -q "$LAKEFS_VERSION" || { echo "the binary does not say $LAKEFS_VERSION"; exit 1; }
    mkdir -p "$lk" && mv "$tmp/lakefs" "$lk/lakefs"
  ) > "$TOOLS_CACHE/lakefs-build.log" 2>&1 &
  lk_pid=$!
fi

# --- apt tools used by tests: RocksDB's sst_dump reads our SSTables independently of our code;
#     with --stack, a compose client parses docker-compose.yaml (`config` needs no Docker engine) ---
apt_install() {  # apt_install REQUIRED|OPTIONAL PKG [WHAT FAILS WITHOUT IT]
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing $2 with apt"
    if [ -z "${APT_UPDATED:-}" ]; then apt-get update -qq >/dev/null || true; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null && return 0
    [ "$1" = REQUIRED ] && die "apt-get install $2 failed"
  fi
  if [ "$1" = REQUIRED ]; then
    echo "setup: warning: could not install $2 (needs root and apt); ${3:-the sst_dump cross-check} will fail" >&2
  else
    echo "setup: note: $2 not installed; the docker-compose parsing test will skip" >&2
  fi
}
command -v sst_dump >/dev/null 2>&1 || apt_install REQUIRED rocksdb-tools
# Debian's Chromium for the trigger-form test (playwright drives it by path; never `playwright install`)
[ -x /usr/bin/chromium ] || apt_install REQUIRED chromium "the browser test of the trigger form"
# Debian's PostgreSQL server binaries: the scheduler-driven tests start their own throwaway cluster
# (tests/airflow/postgres.py); the package's default cluster is never used
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_install REQUIRED postgresql "the scheduler-driven backfill test"
# --- --stack only (`make test`): the compose stack's test needs Debian's Docker engine (started by
#     the tests as root, without systemd: scripts/dockerd.sh), docker-compose 1.29, and debootstrap
#     for the images' Debian base; then its images (scripts/stack_images.sh), in the background like
#     lakeFS's build: a Debian base by debootstrap, stand-ins for the official images, the stack's own
#     image. Kept in the project's Docker engine's data root under ~/.cache/lakefs-gc/docker: only a new
#     machine pays (7m21s measured on 2 cores, mostly downloads); later runs start the engine and check
#     labels (8 to 35 s), which is why the other commands' set-up leaves Docker alone. It waits for
#     lakeFS's binary before building lakeFS's image. ---

# --- uv ---
if ! command -v uv >/dev/null 2>&1; then
  "$PY" -m pip install -q --user uv 2>/dev/null || "$PY" -m pip install -q uv || die "could not install uv with pip"
  export PATH="$HOME/.local/bin:$PATH"
fi

# --- wheels of the pins PyPI has only as source (pyspark, pyspark-client: ~400 MB of jars), built
#     once per machine into ~/.cache/lakefs-gc/wheels and offered to every uv install below and to
#     the wheel test (UV_FIND_LINKS). Without it uv rebuilds pyspark from its sdist on every fresh
#     venv: the proxy in front of PyPI makes each revalidation a new revision of the sdist, so uv's
#     cache grew by ~800 MB and a few minutes of CPU per install (it filled a 90 GB disk in a day). ---
WHEELS=$TOOLS_CACHE/wheels
mkdir -p "$WHEELS"
for pin in $(grep -E '^pyspark(-client)?==' requirements.txt); do
  name=${pin%%==*}
  ls "$WHEELS/${name//-/_}-${pin##*==}-"*.whl >/dev/null 2>&1 && continue
  echo "setup: building the wheel of $pin once (PyPI has only its source)"
  rm -rf "$WHEELS.tmp" && mkdir -p "$WHEELS.tmp"
  "$PY" -m pip wheel -q --no-deps --no-cache-dir -w "$WHEELS.tmp" "$pin" \
    || die "could not build the wheel of $pin (pip wheel: needs network to PyPI once)"
  mv "$WHEELS.tmp"/*.whl "$WHEELS/" && rm -rf "$WHEELS.tmp"
done
export UV_FIND_LINKS=$WHEELS

# --- venv with pinned requirements (and the lint gates': requirements-dev.txt) ---
stamp=$VENV/.requirements.sha
want=$(cat requirements.txt requirements-dev.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -x "$VENV/bin/python" ]; then
  uv venv -q -p "$PY" "$VENV"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing pinned requirements into .venv"
  uv pip install -q -p "$VENV/bin/python" -r requirements.txt -r requirements-dev.txt
  uv pip install -q -p "$VENV/bin/python" -e . --no-deps
  # the editable build leaves lakefs_gc.egg-info in the checkout: with the checkout on sys.path (the
  # tests, a shell in it) importlib.metadata would find our distribution twice, and Airflow would
  # load our plugin twice ("Plugin 'lakefs_gc' already registered"). The venv's own record stays.
  rm -rf "$ROOT/lakefs_gc.egg-info"
  rm -f "$VENV/.bytecode"
  echo "$want" > "$stamp"
fi
# (launched after the venv's editable install: its build writes and removes lakefs_gc.egg-info in the
# checkout, and a docker build reading the context at that moment fails "file not found")
st_pid=
if [ -n "$STACK" ]; then
  command -v dockerd >/dev/null 2>&1 || apt_install REQUIRED docker.io "the compose stack test"
  command -v docker-compose >/dev/null 2>&1 || apt_install REQUIRED docker-compose "the compose stack test"
  command -v debootstrap >/dev/null 2>&1 || apt_install REQUIRED debootstrap "the compose stack's image build"
  if [ "$(id -u)" = 0 ] && command -v dockerd >/dev/null 2>&1 && command -v debootstrap >/dev/null 2>&1; then
    bash scripts/stack_images.sh "$lk/lakefs" > "$TOOLS_CACHE/stack-images.log" 2>&1 &
    st_pid=$!
  else
    echo "setup: warning: not root, or no dockerd/debootstrap: the compose stack's images are not built and its test will fail" >&2
  fi
fi

# --- the sandbox (lakefs_sandbox: the emulator, seeding, `make airflow`; the tests, benches and demo use
#     it) is not in the wheel, so not in the editable install either: the checkout's include/ on the
#     venv's path (lakefs_gc found there too: the same files) ---
site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
[ "$(cat "$site/lakefs_sandbox.pth" 2>/dev/null)" = "$ROOT/include" ] || printf '%s\n' "$ROOT/include" > "$site/lakefs_sandbox.pth"
"$VENV/bin/python" -c 'import lakefs_sandbox' || die "lakefs_sandbox is not importable from .venv ($site/lakefs_sandbox.pth)"

# --- the supported Airflow versions as the wheel test installs them offline, following docs/install.md:
#     Airflow with its constraints (a stand-in of Airflow's file per version, tests/airflow/constraints/),
#     then the provider's requirements without them, against PyPI as of the lock's "pypi-as-of" day (as
#     the test resolves them). Fetched into uv's cache once per lock and pyproject.toml ---
for lock in tests/airflow/constraints/airflow-*.txt; do
  av=$(basename "$lock" .txt) && av=${av#airflow-}
  as_of=$(sed -n 's/^# pypi-as-of: \([^ ]*\).*/\1/p' "$lock")
  [ -n "$as_of" ] || die "$lock has no '# pypi-as-of:' line (tests/airflow/constraints/lock.sh writes one)"
  av_stamp=$TOOLS_CACHE/airflow-$av.sha
  av_want=$(cat "$lock" pyproject.toml | sha256sum | cut -d' ' -f1)
  [ "$(cat "$av_stamp" 2>/dev/null)" = "$av_want" ] && continue
  echo "setup: fetching Airflow $av's packages and the provider's into uv's cache (the wheel test's)"
  av_venv=$TOOLS_CACHE/airflow-$av-venv
  rm -rf "$av_venv" && uv venv -q -p "$VENV/bin/python" "$av_venv"
  UV_EXCLUDE_NEWER=$as_of uv pip install -q -p "$av_venv/bin/python" "apache-airflow==$av" --constraint "$lock" \
    && UV_EXCLUDE_NEWER=$as_of uv pip install -q -p "$av_venv/bin/python" "apache-airflow==$av" -r pyproject.toml \
    || die "could not install Airflow $av with $lock, then the provider's requirements (the wheel test's)"
  rm -rf "$av_venv"
  echo "$av_want" > "$av_stamp"
done
rm -f "$TOOLS_CACHE/airflow-oldest.sha"  # an older set-up's stamp

# --- bytecode for everything installed, as pip would have written it (uv does not by default).
#     Without it a process that may not write .pyc files (PYTHONDONTWRITEBYTECODE) compiles every
#     module it imports from source: Airflow and the Kubernetes client cost every Airflow task
#     process and every DAG parse ~10 s of CPU instead of ~3 s. Files that are not Python 3 are
#     skipped, as pip skips them. ---
if [ ! -f "$VENV/.bytecode" ]; then
  echo "setup: compiling the venv's bytecode"
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$VENV/bin/python" -m compileall -q -j 0 "$site" >/dev/null 2>&1 || true
  touch "$VENV/.bytecode"
fi

# --- the cloud stand-ins the tests talk HTTP to (started and stopped by the tests by PID):
#     Azurite (Azure Blob, from npm) and fake-gcs-server (Google Cloud Storage, a Go module), built
#     once per machine under ~/.cache/lakefs-gc/ and linked into .tools/ ---
AZURITE_VERSION=3.37.0
FAKE_GCS_VERSION=v1.52.2
mkdir -p "$TOOLS" "$TOOLS_CACHE"
az=$TOOLS_CACHE/azurite-$AZURITE_VERSION
if [ ! -x "$az/node_modules/.bin/azurite-blob" ]; then
  command -v npm >/dev/null 2>&1 || die "npm not found: install Node.js (Debian: apt-get install nodejs npm) for Azurite, and re-run"
  echo "setup: installing Azurite $AZURITE_VERSION (npm) into $az"
  rm -rf "$az.tmp" && mkdir -p "$az.tmp"
  npm install --silent --no-save --no-audit --no-fund --prefix "$az.tmp" "azurite@$AZURITE_VERSION" >/dev/null \
    || die "npm install azurite@$AZURITE_VERSION failed"
  rm -rf "$az" && mv "$az.tmp" "$az"
fi
[ -L "$TOOLS/azurite" ] || rm -rf "$TOOLS/azurite"  # an install of an older set-up, in place
ln -sfn "$az" "$TOOLS/azurite"
gcs=$TOOLS_CACHE/fake-gcs-server-$FAKE_GCS_VERSION
if [ ! -x "$gcs/fake-gcs-server" ]; then
  command -v go >/dev/null 2>&1 || die "go not found: install Go 1.24+ for fake-gcs-server, and re-run"
  echo "setup: building fake-gcs-server $FAKE_GCS_VERSION (go install) into $gcs"
  mkdir -p "$gcs"
  GOBIN="$gcs" go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION" \
    || die "go install github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION failed"
fi
mkdir -p "$TOOLS/bin" && ln -sfn "$gcs/fake-gcs-server" "$TOOLS/bin/fake-gcs-server"

# --- the GC page's UI tests (`make test` runs them: vitest in jsdom) and its build (`make ui`): Node
#     20.19+ (vite 7, vitest 4, jsdom 29), and www's node_modules by `npm ci` from its lock, again only
#     when package-lock.json is newer than the install (npm's node_modules/.package-lock.json) ---
www=plugins/lakefs_gc_airflow/gc_page/www
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
  || die "node or npm not found: install Node.js 20.19+ with npm (Debian: apt-get install nodejs npm; or nodejs.org) for the GC page's UI tests, and re-run"
IFS=. read -r nmaj nmin _ <<< "$(node -p process.versions.node)"
{ [ "$nmaj" -eq 20 ] && [ "$nmin" -ge 19 ]; } || { [ "$nmaj" -eq 22 ] && [ "$nmin" -ge 13 ]; } || [ "$nmaj" -ge 24 ] \
  || die "Node $(node --version) found, but the GC page's UI tests need Node.js 20.19+, 22.13+ or 24+: install one (nodejs.org) and re-run"
if [ ! -f "$www/node_modules/.package-lock.json" ] || [ "$www/package-lock.json" -nt "$www/node_modules/.package-lock.json" ]; then
  echo "setup: installing the GC page's node_modules (npm ci in $www)"
  (cd "$www" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || die "npm ci in $www failed"
fi

# --- the package as a zip for spark-submit --py-files (rewritten when the package's content changes:
#     a stale zip runs old code in the jobs). The operators build the same zip from the installed
#     package themselves (lakefs_gc.spark.bundle); this copy is for running a job by hand. ---
"$VENV/bin/python" -m lakefs_gc.spark.bundle build/lakefs_gc.zip >/dev/null
if [ -n "$lk_pid" ]; then
  wait "$lk_pid" || die "building lakeFS $LAKEFS_VERSION failed; its log: $TOOLS_CACHE/lakefs-build.log
$(tail -n 20 "$TOOLS_CACHE/lakefs-build.log")"
  echo "setup: lakeFS $LAKEFS_VERSION built ($("$lk/lakefs" --version 2>&1 | head -n1))"
fi
ln -sfn "$lk/lakefs" "$TOOLS/bin/lakefs"
if [ -n "$st_pid" ]; then
  wait "$st_pid" || die "building the compose stack's images failed; its log: $TOOLS_CACHE/stack-images.log
$(tail -n 20 "$TOOLS_CACHE/stack-images.log")"
  echo "setup: the compose stack's images are ready (stand-ins built this time: $(grep -c 'building the stand-in' "$TOOLS_CACHE/stack-images.log" || true))"
fi
# --- the Spark driver's class archive (lakefs_gc.spark.jvm: made once, ~40 s, after lakeFS's build so
#     that both do not share the cores; the jobs then start about 8 s faster each). ---
"$VENV/bin/python" -m lakefs_gc.spark.jvm >/dev/null
echo "setup: ok (.venv ready, lakeFS $LAKEFS_VERSION in .tools/bin, build/lakefs_gc.zip built)"
