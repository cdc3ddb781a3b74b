#!/usr/bin/env bash
# The collection as users get it: build the tarball, install it into an empty path, render every plugin's docs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$repo/.venv/bin
work=$repo/.cache/collection-check
rm -rf "$work" && mkdir -p "$work"
"$bin/ansible-galaxy" collection build --force --output-path "$work" "$repo" >/dev/null
if ! out=$("$bin/ansible-galaxy" collection install --force -p "$work/installed" "$work"/specdec-bench-*.tar.gz 2>&1); then
  echo "$out" >&2
  exit 1
fi
export ANSIBLE_COLLECTIONS_PATH=$work/installed
modules=$(cd "$repo/plugins/modules" && for path in *.py; do echo "${path%.py}"; done)
# Filter names are the keys of each FilterModule.filters() dict.
filters=$("$bin/python" -c '
import re, sys
for path in sys.argv[1:]:
    body = open(path).read().split("def filters(self):", 1)[-1]
    print("\n".join(re.findall(r"[\x27\"](\w+)[\x27\"]\s*:", body)))' "$repo"/plugins/filter/*.py)
render() {
  "$bin/ansible-doc" --json -t "$1" "specdec.bench.$2" | "$bin/python" -c '
import json, sys
assert json.load(sys.stdin), "no documentation rendered for " + sys.argv[1]' "$1 specdec.bench.$2"
  echo "rendered $1 specdec.bench.$2"
}
for name in $modules; do render module "$name"; done
for name in $filters; do render filter "$name"; done
echo "installed from $(ls "$work"/specdec-bench-*.tar.gz)"
