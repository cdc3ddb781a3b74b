"""The molecule scenarios' merged configuration: .config/molecule/config.yml under each molecule.yml.

Loaded through molecule's own config loader (tests/build/molecule_config.py), as `molecule test` builds it.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCENARIOS = sorted(p.parent.name for p in (REPO / "molecule").glob("*/molecule.yml"))

pytest.importorskip("molecule", reason="molecule is installed with requirements.txt")


@pytest.fixture(name="merged", scope="module")
def fixture_merged():
    spec = importlib.util.spec_from_file_location("molecule_config", REPO / "tests" / "build" / "molecule_config.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cwd, path = os.getcwd(), os.environ.get("PATH", "")
    os.chdir(REPO)
    # molecule runs ansible-config: the one beside this interpreter, as under make
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), path])
    try:
        return {name: module.merged_config(REPO / "molecule" / name / "molecule.yml") for name in SCENARIOS}
    finally:
        os.chdir(cwd)
        os.environ["PATH"] = path


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_scenario_gets_the_base(merged, name):
    config = merged[name]
    assert config["driver"]["name"] == "podman"
    assert config["verifier"]["name"] == "testinfra"
    assert config["verifier"]["options"] == {"p": "no:cacheprovider"}
    assert config["ansible"]["playbooks"]["prepare"] == "../../tests/sim/seed.yml"
    assert config["provisioner"]["inventory"]["group_vars"]["sim"]["ansible_python_interpreter"] == "/usr/bin/python3"
    assert config["scenario"]["name"] == name
    assert all("sim" in platform["groups"] for platform in config["platforms"])


def test_a_scenario_keeps_what_differs_over_the_base(merged):
    # its own converge playbook, group variables merged key by key with the base's
    assert merged["default"]["ansible"]["playbooks"]["converge"] == "../../playbooks/probe.yml"
    assert merged["default"]["ansible"]["playbooks"]["prepare"] == "../../tests/sim/seed.yml"
    assert merged["default"]["provisioner"]["inventory"]["group_vars"]["sim"]["probe_units"][-1] == "nosuch-unit.service"
    # a test sequence of its own replaces the base's list; without one, the base's
    assert "check" not in merged["stage"]["scenario"]["test_sequence"]
    assert merged["units"]["scenario"]["test_sequence"] == [
        "destroy", "syntax", "create", "prepare", "converge", "idempotence", "check", "side_effect", "verify", "destroy"]
    assert merged["units"]["ansible"]["playbooks"]["converge"] == "converge.yml"
