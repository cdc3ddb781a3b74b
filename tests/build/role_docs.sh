#!/usr/bin/env bash
# Each role's README.md has hand-written parts (a title, an introduction, an example playbook) and a reference part
# between <!-- BEGIN_ANSIBLE_DOCS --> and <!-- END_ANSIBLE_DOCS -->, generated from its meta/argument_specs.yml by
# aar-doc in inject mode (pinned in requirements.txt; run through tests/build/role_readme.py, which renders the semantic
# markup aar-doc leaves as it is and drops aar-doc's own example). Only the reference part is ever rewritten.
#   tests/build/role_docs.sh           regenerate the reference part of every roles/<role>/README.md (make role-docs)
#   tests/build/role_docs.sh --check   inject afresh into a copy in a temporary folder and fail, naming the role, when
#                                      a committed README differs (make lint)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
aar_doc=("$repo/.venv/bin/python" "$repo/tests/build/role_readme.py")
cd "$repo"   # no .aar_doc.yml here: the options below are the whole configuration
check=false
case "${1:-}" in
  --check) check=true ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
stale=()
roles=()
for role_dir in "$repo"/roles/*/; do
  role=$(basename "$role_dir")
  roles+=("$role")
  # inject into a copy: a README without one writes the reference part alone (aar-doc then replaces)
  if [[ -f "$role_dir/README.md" ]]; then
    cp "$role_dir/README.md" "$fresh/$role.md"
  fi
  # aar-doc logs at INFO on stderr; keep it for a failure only
  if ! log=$("${aar_doc[@]}" --output-file "$fresh/$role.md" --output-mode inject \
      "$role_dir" markdown 2>&1); then
    echo "aar-doc failed for role $role (does its README.md have the BEGIN_ANSIBLE_DOCS and END_ANSIBLE_DOCS lines?):" >&2
    echo "$log" >&2
    exit 1
  fi
  if $check; then
    cmp -s "$fresh/$role.md" "$role_dir/README.md" || stale+=("$role")
  elif ! cmp -s "$fresh/$role.md" "$role_dir/README.md"; then
    cp "$fresh/$role.md" "$role_dir/README.md"
    echo "regenerated roles/$role/README.md"
  fi
done
if ((${#stale[@]})); then
  for role in "${stale[@]}"; do
    echo "roles/$role/README.md is not what roles/$role/meta/argument_specs.yml generates:" >&2
    diff -u "$repo/roles/$role/README.md" "$fresh/$role.md" | head -n 20 >&2 || true
  done
  echo "run: make role-docs (tests/build/role_docs.sh), then commit the READMEs" >&2
  exit 1
fi
$check && echo "role READMEs current: ${roles[*]}"
exit 0
