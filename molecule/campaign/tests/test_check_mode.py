"""playbooks/campaign.yml --check on the simulated CT200: prints the plan and what would run and stop, changes nothing."""
import os
import sys

import testinfra
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
import simhost  # noqa: E402  pylint: disable=wrong-import-position

BOX = testinfra.get_host("podman://campaign-ct200")
SPEC = {"campaign": "checked", "model": "/models/Qwen3.6-27B", "tp": [1, 8], "methods": {"autoregressive": {}},
        "workload": {"input_len": 32, "output_len": 32, "num_prompts": 4}, "concurrency": [1]}


def host_state():
    return {"units": BOX.check_output("systemctl list-units --plain --no-legend --state=active 'ddtree-*' 'specdec-*'"),
            "files": BOX.check_output("find /root/bench_results /var/lib/specdec /etc/systemd/system -newer /etc/hostname"
                                      " 2>/dev/null | sort | md5sum"),
            "results": BOX.check_output("ls /root/bench_results")}


def test_check_mode_prints_the_plan_and_changes_nothing(tmp_path):
    extra = tmp_path / "checked.yml"
    extra.write_text(yaml.safe_dump({"campaign_hosts": "campaign-ct200", "campaign_spec": SPEC}))
    before = host_state()
    rc, out = simhost.playbook(simhost.REPO / "playbooks" / "campaign.yml", "-e", f"@{extra}", "--check")
    assert rc == 0, out[-3000:]
    assert "checked on campaign-ct200: 2 stage(s), 2 feasible" in out
    assert "2 stages planned, 0 finished earlier, 2 to run: tp1-autoregressive, tp8-autoregressive" in out
    assert "would stop ddtree-qwen.service and restore it after the stages" in out
    assert simhost.recap(out, "campaign-ct200")["changed"] == 0
    assert host_state() == before
    assert not BOX.file("/root/bench_results/checked").exists and not BOX.file("/var/lib/specdec/campaign.lock").exists


def test_a_changed_spec_for_a_finished_campaign_is_refused_before_anything_changes(tmp_path):
    """The matrix ran with 8 prompts; the same campaign id with 4 is another experiment and must get its own id."""
    host_vars = os.path.join(os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"]), "host_vars", "campaign-ct200")
    with open(host_vars, encoding="utf-8") as handle:
        spec = yaml.safe_load(handle)["campaign_spec"]
    spec["workload"] = dict(spec["workload"], num_prompts=4)
    extra = tmp_path / "changed.yml"
    extra.write_text(yaml.safe_dump({"campaign_hosts": "campaign-ct200", "campaign_spec": spec}))
    before = host_state()
    rc, out = simhost.playbook(simhost.REPO / "playbooks" / "campaign.yml", "-e", f"@{extra}")
    assert rc != 0
    assert "campaign matrix on campaign-ct200 was started with another spec: tp1-autoregressive (workload);" in out
    assert "give the changed spec a new campaign id" in out
    assert host_state() == before
