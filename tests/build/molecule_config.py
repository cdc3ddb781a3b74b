# Copyright: specdec.bench developers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Print each molecule scenario's merged configuration, as molecule itself builds it.

Molecule merges its defaults, the base config (``.config/molecule/config.yml``, found from the repository root
as ``molecule`` finds it) and the scenario's ``molecule.yml``. Dumping the result before and after moving keys
between the base and the scenarios shows that a scenario still gets exactly the same configuration:

    .venv/bin/python tests/build/molecule_config.py --out /tmp/before   # on the old tree
    .venv/bin/python tests/build/molecule_config.py --out /tmp/after
    diff -r /tmp/before /tmp/after
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / ".config" / "molecule" / "config.yml"


def merged_config(molecule_file: Path) -> dict:
    """The scenario's config_data from molecule's own loader (with the base config when it exists)."""
    from molecule.config import Config  # pylint: disable=import-outside-toplevel

    args = {"base_config": [str(BASE)] if BASE.is_file() else []}
    return Config(str(molecule_file), args=args).config_data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for one <scenario>.json per scenario")
    parser.add_argument("scenarios", nargs="*", help="scenario names (default: all)")
    args = parser.parse_args()
    os.chdir(REPO)
    os.environ.setdefault("MOLECULE_PROJECT_DIRECTORY", str(REPO))
    # molecule runs ansible-config: the one beside this interpreter, as under make
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    names = args.scenarios or sorted(p.parent.name for p in (REPO / "molecule").glob("*/molecule.yml"))
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        data = merged_config(REPO / "molecule" / name / "molecule.yml")
        (args.out / f"{name}.json").write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        print(f"{name}: {len(json.dumps(data))} bytes of merged config")
    return 0


if __name__ == "__main__":
    sys.exit(main())
