#!/usr/bin/env bash
# Writes tests/airflow/constraints/airflow-<VERSION>.txt: the stand-in for Airflow's own constraints
# file of that version (constraints-<VERSION>/constraints-3.11.txt in Airflow's GitHub repository,
# which the tests cannot read: GitHub's raw host is out of their reach). Resolved the way Airflow
# makes its own: apache-airflow==<VERSION> with the providers this provider needs (the
# apache-airflow-providers-* of pyproject.toml), every package at its newest as of the day after
# apache-airflow <VERSION> reached PyPI (uv pip compile --exclude-newer), for Python 3.11. Nothing of
# this provider's own requirements is forced in: where they ask for newer versions, the second step
# of docs/install.md (the provider, without the constraints) moves them, and the wheel test holds
# docs/install.md to what it moves.
#
# The file's header also records "pypi-as-of": the day that second step resolves against (PyPI as it
# stood then: UV_EXCLUDE_NEWER in the wheel test, offline, and in scripts/setup.sh, which fills uv's
# cache with it). Default: today.
#
# usage: tests/airflow/constraints/lock.sh VERSION [PYPI_AS_OF]   (needs PyPI; run from anywhere)
set -euo pipefail
cd "$(dirname "$0")/../../.."
version=${1:?usage: $0 AIRFLOW_VERSION [PYPI_AS_OF, e.g. 2026-11-29T00:00:00Z]}
as_of=${2:-$(date -u +%Y-%m-%dT00:00:00Z)}
out=tests/airflow/constraints/airflow-$version.txt
uv=$(command -v uv || echo "$HOME/.local/bin/uv")

read -r uploaded cutoff < <(python3 - "$version" <<'EOF'
import datetime, json, sys, urllib.request
version = sys.argv[1]
req = urllib.request.Request("https://pypi.org/simple/apache-airflow/",
                             headers={"Accept": "application/vnd.pypi.simple.v1+json"})
files = json.load(urllib.request.urlopen(req, timeout=60))["files"]
times = [f["upload-time"] for f in files
         if f["filename"] in (f"apache_airflow-{version}-py3-none-any.whl", f"apache_airflow-{version}.tar.gz")]
if not times:
    sys.exit(f"apache-airflow {version} is not on PyPI")
first = datetime.datetime.fromisoformat(min(times).replace("Z", "+00:00"))
cutoff = (first + datetime.timedelta(days=1)).date()
print(first.strftime("%Y-%m-%dT%H:%MZ"), f"{cutoff}T00:00:00Z")
EOF
)
mapfile -t providers < <(python3 -c '
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print("\n".join(sorted({re.match(r"[A-Za-z0-9._-]+", d).group(0) for d in deps if d.startswith("apache-airflow-providers-")})))')

req_in=$(mktemp) && trap 'rm -f "$req_in" "$out.tmp"' EXIT
printf '%s\n' "apache-airflow==$version" "${providers[@]}" > "$req_in"
"$uv" pip compile -q --python-version 3.11 --exclude-newer "$cutoff" --no-header --no-annotate "$req_in" -o "$out.tmp"
{
  echo "# Stand-in for Airflow's constraints-$version/constraints-3.11.txt: apache-airflow==$version and the"
  echo "# providers this provider needs (${providers[*]}),"
  echo "# each package at its newest as of the day after apache-airflow $version reached PyPI ($uploaded)."
  echo "# Made by tests/airflow/constraints/lock.sh $version $as_of, that is:"
  echo "#   uv pip compile --python-version 3.11 --exclude-newer $cutoff (apache-airflow==$version ${providers[*]})"
  echo "# pypi-as-of: $as_of   (docs/install.md's second step, the provider, resolves against PyPI as of then)"
  cat "$out.tmp"
} > "$out"
echo "wrote $out ($(grep -vc '^#' "$out") packages; cutoff $cutoff, pypi-as-of $as_of)"
