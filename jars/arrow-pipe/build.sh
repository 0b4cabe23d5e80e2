#!/usr/bin/env bash
# Build jars/arrow-pipe.jar (the columnar JVM reader, docs/spark-speed.md) with javac against the installed
# pyspark's own jars, so the jar matches the Spark it runs in. Needs a JDK (javac); no Maven, no download.
# Usage: jars/arrow-pipe/build.sh [PYTHON]   (PYTHON: the interpreter with pyspark; default .venv/bin/python)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
python="${1:-$repo/.venv/bin/python}"
spark_jars="$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
out="$repo/jars/arrow-pipe.jar"
classes="$(mktemp -d)"
trap 'rm -rf "$classes"' EXIT
javac -nowarn -Xlint:-options --release 17 -d "$classes" -cp "$spark_jars/*" "$here"/src/io/sparklogsource/arrowpipe/*.java
cp -r "$here/resources/META-INF" "$classes/"
jar --create --file "$out.tmp" -C "$classes" .
mv "$out.tmp" "$out"
echo "built $out" >&2
