"""meta/execution-environment.yml: ansible-builder's version 3 format, checked with ``ansible-builder create`` (no
registry) and with the introspection an EE build runs over the installed collections."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[3]
META = REPO / "meta"
BIN = pathlib.Path(sys.executable).parent
BUILDER = BIN / "ansible-builder"
pytestmark = pytest.mark.skipif(not BUILDER.exists(), reason="needs ansible-builder (requirements.txt)")


def requirement_names(path):
    return {line.split("==")[0].split()[0] for line in path.read_text().splitlines() if line and not line.startswith("#")}


def test_the_definition_names_the_controllers_requirements_relative_to_the_collection_root():
    ee = yaml.safe_load((META / "execution-environment.yml").read_text())
    assert ee["version"] == 3
    assert ee["dependencies"]["python"] == "meta/ee-requirements.txt"
    assert ee["dependencies"]["system"] == "meta/ee-bindep.txt"
    assert {"scipy", "matplotlib"} <= requirement_names(META / "ee-requirements.txt")
    pins = dict(line.split("==") for line in (REPO / "requirements.txt").read_text().splitlines() if "==" in line)
    for line in (META / "ee-requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            assert pins[name] == version, "%s: the EE's pin is not the one the tests run with" % name
    assert "rsync" in (META / "ee-bindep.txt").read_text()


@pytest.fixture(name="context")
def fixture_context(tmp_path):
    """ansible-builder create over a copy of the definition at a collection-like root; the build context it writes."""
    root = tmp_path / "root"
    (root / "meta").mkdir(parents=True)
    for name in ("execution-environment.yml", "ee-requirements.txt", "ee-bindep.txt"):
        shutil.copy2(META / name, root / "meta" / name)
    shutil.copy2(META / "execution-environment.yml", root / "execution-environment.yml")
    result = subprocess.run([str(BUILDER), "create", "-f", "execution-environment.yml", "--context", str(tmp_path / "context")],
                            cwd=root, capture_output=True, text=True, timeout=120, check=False,
                            env=dict(os.environ, PATH="%s:%s" % (BIN, os.environ.get("PATH", ""))))
    assert result.returncode == 0, result.stdout + result.stderr
    return tmp_path / "context"


def test_ansible_builder_create_writes_the_containerfile_and_copies_the_requirements(context):
    containerfile = (context / "Containerfile").read_text()
    assert "ansible-core==2.19.14" in containerfile
    assert (context / "_build" / "requirements.txt").read_text() == (META / "ee-requirements.txt").read_text()
    assert (context / "_build" / "bindep.txt").read_text() == (META / "ee-bindep.txt").read_text()
    assert "ansible.posix" in (context / "_build" / "requirements.yml").read_text()


def test_an_ee_that_installs_the_collection_gets_its_requirements(context, tmp_path):
    """The introspection of the build, over a collections tree holding this collection, finds both files."""
    tree = tmp_path / "collections" / "ansible_collections" / "specdec" / "bench"
    (tree / "meta").mkdir(parents=True)
    for name in ("execution-environment.yml", "ee-requirements.txt", "ee-bindep.txt"):
        shutil.copy2(META / name, tree / "meta" / name)
    shutil.copy2(REPO / "galaxy.yml", tree / "galaxy.yml")
    result = subprocess.run([sys.executable, str(context / "_build" / "scripts" / "introspect.py"), "introspect",
                             str(tmp_path / "collections")], capture_output=True, text=True, timeout=60, check=True)
    found = yaml.safe_load(result.stdout)
    assert any(line.startswith("scipy==") for line in found["python"])
    assert any(line.startswith("matplotlib==") for line in found["python"])
    assert any(line.startswith("rsync ") for line in found["system"])
