#!/usr/bin/env bash
# The collection's documentation as the Ansible ecosystem checks it (make lint): role READMEs current with their
# argument specs (aar-doc), changelog fragments and changelog.yaml valid and CHANGELOG.md generated from them
# (antsibull-changelog), every plugin's and role's docs valid and rendered (antsibull-docs). All offline.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$repo/.venv/bin
# antsibull-docs runs ansible-doc: the pinned one, also when run outside make
export PATH=$bin:$PATH
cd "$repo"
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT

tests/build/role_docs.sh --check

"$bin/antsibull-changelog" lint
"$bin/antsibull-changelog" lint-changelog-yaml changelogs/changelog.yaml
"$bin/antsibull-changelog" generate --output "$fresh/CHANGELOG.md" --output-format md
if ! cmp -s "$fresh/CHANGELOG.md" CHANGELOG.md; then
  echo "CHANGELOG.md is not what changelogs/changelog.yaml generates:" >&2
  diff -u CHANGELOG.md "$fresh/CHANGELOG.md" | head -n 20 >&2 || true
  echo "run: .venv/bin/antsibull-changelog generate (never edit CHANGELOG.md; add a fragment to changelogs/fragments/)" >&2
  exit 1
fi
echo "changelog fragments valid, CHANGELOG.md current"

# The linter loads the collection from a copy of its own; ANSIBLE_COLLECTIONS_PATH (the Makefile's) lets ansible-doc
# resolve specdec.bench references to this checkout, nothing is fetched.
"$bin/antsibull-docs" lint-collection-docs --plugin-docs .
echo "antsibull-docs: plugin and role documentation valid"
