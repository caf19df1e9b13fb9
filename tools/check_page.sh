#!/usr/bin/env bash
# Build one notebook's page with the book's config into a temporary directory and fail on its warnings.
#   tools/check_page.sh notebooks/03_self_attention.ipynb [--keep] [--ignore-missing]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="$here/.venv/bin/python"
[ -x "$py" ] || py=python3
exec "$py" "$here/tools/check_page.py" "$@"
