#!/usr/bin/env bash
# Build one notebook's page with the book's config into a temporary directory and fail on its warnings.
#   bookbuild/check_page.sh notebooks/03_self_attention.ipynb [--keep] [--ignore-missing]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="$here/.venv/bin/python"
[ -x "$py" ] || py=python3
# run from the root, where the package bookbuild is; the pages named stay the files the caller meant
args=()
for a in "$@"; do if [ -e "$a" ]; then args+=("$(realpath "$a")"); else args+=("$a"); fi; done
cd "$here"
exec "$py" -m bookbuild.check_page "${args[@]}"
