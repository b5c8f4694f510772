#!/usr/bin/env bash
# Fetch what lakeFS's own Spark GC needs beside pyspark 4.2 (Hadoop 3.5.0) from Maven Central into
# build/reference/ (Maven's cache: build/reference/m2), and try lakeFS's GC itself,
# io.lakefs:lakefs-spark-client_2.13. Prints the two variables bench/reference.py and
# tests/bench/test_reference_gc.py read. Not part of `make test`: about 1 GiB of AWS SDK bundles.
#
#   bash scripts/reference_jars.sh && eval "$(bash scripts/reference_jars.sh --env)"
#
# Exit status 2 when the GC jar cannot be had from Maven Central (then build it yourself and set
# LAKEFS_GC_REFERENCE_JAR; the Hadoop jars here still serve it).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/reference
REPO_LOCAL=$PWD/$OUT/m2
GC_VERSION=${LAKEFS_GC_REFERENCE_VERSION:-0.22.0}
# hadoop-aws matching pyspark 4.2.0's hadoop-client-api 3.5.0, the AWS SDK v2 bundle it wants, its
# analytics accelerator, and the AWS SDK v1 bundle the GC's own S3 client (S3ClientBuilder) uses.
ARTIFACTS=(
  org.apache.hadoop:hadoop-aws:3.5.0
  software.amazon.awssdk:bundle:2.35.4
  software.amazon.s3.analyticsaccelerator:analyticsaccelerator-s3:1.3.1
  org.wildfly.openssl:wildfly-openssl:2.2.5.Final
  com.amazonaws:aws-java-sdk-bundle:1.12.720
)
jar_path() {  # G:A:V -> path in the local repository
  local g a v; IFS=: read -r g a v <<<"$1"
  echo "$REPO_LOCAL/${g//.//}/$a/$v/$a-$v.jar"
}
if [ "${1:-}" = "--env" ]; then
  extra=""
  for art in "${ARTIFACTS[@]}"; do extra="$extra${extra:+,}$(jar_path "$art")"; done
  echo "export LAKEFS_GC_REFERENCE_JARS=$extra"
  gc=$(jar_path "io.lakefs:lakefs-spark-client_2.13:$GC_VERSION")
  [ -f "$gc" ] && echo "export LAKEFS_GC_REFERENCE_JAR=$gc"
  exit 0
fi
command -v mvn >/dev/null || { echo "reference_jars: mvn not found (Debian: apt-get install maven)" >&2; exit 1; }
mkdir -p "$OUT"
for art in "${ARTIFACTS[@]}"; do
  if [ ! -f "$(jar_path "$art")" ]; then
    echo "reference_jars: fetching $art"
    mvn -q -B -Dmaven.repo.local="$REPO_LOCAL" dependency:get -Dartifact="$art" -Dtransitive=false \
      || { echo "reference_jars: could not fetch $art from Maven Central" >&2; exit 1; }
  fi
done
gc="io.lakefs:lakefs-spark-client_2.13:$GC_VERSION"
if [ ! -f "$(jar_path "$gc")" ] && ! mvn -q -B -Dmaven.repo.local="$REPO_LOCAL" dependency:get -Dartifact="$gc" \
    -Dtransitive=false >/dev/null 2>&1; then
  echo "reference_jars: $gc is not served by the Maven Central reachable from here; build lakeFS's" \
       "clients/spark yourself and set LAKEFS_GC_REFERENCE_JAR to its assembly jar" >&2
  exit 2
fi
echo "reference_jars: ok; eval \"\$(bash scripts/reference_jars.sh --env)\""
