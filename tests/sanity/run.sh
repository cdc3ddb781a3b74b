#!/usr/bin/env bash
# ansible-test sanity on a copy laid out as ansible_collections/specdec/bench (ansible-test needs that path).
# --venv --requirements: each test's pinned tools in their own virtualenv, no container engine needed.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
# SANITY_DIR: a folder of one's own, so that two runs at once do not delete each other's copy
root=${SANITY_DIR:-$repo/.cache/sanity}/ansible_collections/specdec/bench
rm -rf "$root" && mkdir -p "$root"
# Only what git tracks (or would track): the copy is what a clean clone holds.
# cp's errors are ignored: a tracked file deleted in the work tree is simply not copied.
(cd "$repo" && git ls-files -z --cached --others --exclude-standard) | (cd "$repo" && { xargs -0 cp --parents -t "$root" 2>/dev/null || true; })
# ansible-test fetches a pip bootstrap script from a host we cannot reach; give it the stand-in.
pip_version=$(sed -n "s/^ *pip='\([0-9.]*\)',$/\1/p" "$repo"/.venv/lib/python3.*/site-packages/ansible_test/_internal/python_requirements.py | head -1)
pip_version=${pip_version:-24.2}
install -D -m 0644 "$repo/tests/sanity/get_pip.py" "$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
cd "$root"
git init -q && git add -A && git -c user.email=ci@localhost -c user.name=ci commit -qm sanity
exec "$repo/.venv/bin/ansible-test" sanity --venv --requirements --python 3.11 --color no "$@"
