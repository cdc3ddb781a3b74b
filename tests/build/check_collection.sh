#!/usr/bin/env bash
# The collection as users get it: build the tarball, install it into an empty path, render every plugin's docs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$repo/.venv/bin
work=$repo/.cache/collection-check
rm -rf "$work" && mkdir -p "$work"
"$bin/ansible-galaxy" collection build --force --output-path "$work" "$repo" >/dev/null
# Installed as a user with ansible-core alone gets it: offline, seeing no collection but those given (not the venv's
# bundled ones), its dependency ansible.posix must be asked for, and is installed from a local artifact of it. The
# artifact is built from the venv's copy of ansible.posix (galaxy.yml written from its MANIFEST.json).
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false ANSIBLE_COLLECTIONS_PATH=$work/none
posix=("$repo"/.venv/lib/python3.*/site-packages/ansible_collections/ansible/posix)
cp -r "${posix[0]}" "$work/posix-src"
"$bin/python" - "$work/posix-src" <<'PY'
import json, os, sys, yaml
src = sys.argv[1]
info = json.load(open(os.path.join(src, 'MANIFEST.json')))['collection_info']
keep = ('namespace', 'name', 'version', 'readme', 'authors', 'description', 'license', 'tags', 'dependencies', 'repository')
yaml.safe_dump({key: info[key] for key in keep if info.get(key) not in (None, '', [])}, open(os.path.join(src, 'galaxy.yml'), 'w'))
for name in ('MANIFEST.json', 'FILES.json'):
    os.remove(os.path.join(src, name))
PY
"$bin/ansible-galaxy" collection build --force --output-path "$work" "$work/posix-src" >/dev/null
if out=$("$bin/ansible-galaxy" collection install --offline -p "$work/alone" "$work"/specdec-bench-*.tar.gz 2>&1) \
   || ! grep -q 'ansible.posix' <<<"$out"; then
  echo "installed without its dependency ansible.posix, or failed for another reason: $out" >&2
  exit 1
fi
if ! out=$("$bin/ansible-galaxy" collection install --offline --force -p "$work/installed" "$work"/specdec-bench-*.tar.gz \
      "$work"/ansible-posix-*.tar.gz 2>&1); then
  echo "$out" >&2
  exit 1
fi
[ -f "$work/installed/ansible_collections/ansible/posix/plugins/modules/synchronize.py" ] || {
  echo "ansible.posix was not installed with specdec.bench" >&2; exit 1; }
artifact=("$work"/ansible-posix-*.tar.gz)
echo "installed offline with its dependency: ${artifact[0]}"
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
