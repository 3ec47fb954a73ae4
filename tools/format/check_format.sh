#!/bin/bash
# Fails listing every tracked C/C++/CUDA/OpenCL C source that clang-format 14
# (Debian 12's, with the repository's .clang-format files) would change; other
# versions format some constructs differently. Fix with: clang-format-14 -i FILE.
set -euo pipefail
repo=${1:-$(dirname "$0")/../..}
clang_format=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$clang_format" >/dev/null; then
  echo "check_format: '$clang_format' not found (tools/setup/setup.sh installs clang-format-14)" >&2
  exit 1
fi
cd "$repo"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "check_format: $repo is not a git checkout; nothing to check" >&2
  exit 0
fi
report=$(git ls-files -z '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.cl' |
  xargs -0 "$clang_format" --dry-run 2>&1)
unformatted=$(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' \
  <<<"$report" | sort -u)
if [ -n "$unformatted" ]; then
  echo "not clang-formatted (run $clang_format -i on them):" >&2
  echo "$unformatted" >&2
  exit 1
fi
if [ -n "$report" ]; then
  echo "check_format: $clang_format reported:" >&2
  echo "$report" >&2
  exit 1
fi
