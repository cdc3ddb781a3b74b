"""What playbooks/probe.yml (the converge step) saved on the controller agrees with the live hosts."""
import json
import os
import pathlib

import pytest


def summary(host):
    name = host.ansible.get_variables()["inventory_hostname"]
    path = pathlib.Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "probe" / f"{name}.json"
    return name, json.loads(path.read_text())


def test_ct200_gpu0_is_held_by_ddtree_qwen_with_its_real_pid(host):
    name, probe = summary(host)
    if name != "ct200":
        pytest.skip("ct200 only")
    main_pid = int(host.check_output("systemctl show --property=MainPID --value ddtree-qwen.service"))
    gpu0 = probe["gpus"][0]
    assert gpu0["holders"] == [{"pid": main_pid, "unit": "ddtree-qwen.service", "used_memory_mib": 56077}]
    assert gpu0["unexplained_memory_mib"] == 0
    assert all(gpu["holders"] == [] for gpu in probe["gpus"][1:])
    assert len(probe["gpus"]) == 8


def test_ct200_units_tell_stopped_from_missing(host):
    name, probe = summary(host)
    if name != "ct200":
        pytest.skip("ct200 only")
    units = probe["units"]
    assert units["ddtree-qwen.service"]["active_state"] == "active"
    for unit in ("sglang-dflash-smoke.service", "sglang-ddtree-tree.service"):
        assert (units[unit]["load_state"], units[unit]["active_state"]) == ("loaded", "inactive")
    assert units["nosuch-unit.service"]["load_state"] == "not-found"
    assert 30000 in probe["listening_ports"]
    assert probe["disks"]["/root/bench_results"]["exists"] is False


def test_a100box_six_gpus_no_nvlink_in_a_container(host):
    name, probe = summary(host)
    if name != "a100box":
        pytest.skip("a100box only")
    assert [g["name"] for g in probe["gpus"]] == ["NVIDIA A100-PCIE-40GB"] * 6
    assert all(g["nvlink_peers"] == [] and g["memory_total_mib"] == 40960 for g in probe["gpus"])
    assert probe["container"] in ("docker", "podman")
    assert probe["cuda"] == "13.2"
