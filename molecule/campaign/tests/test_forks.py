"""A campaign over three hosts with `forks: 1`, so that stages wait for a free worker: every stage ok.

With more hosts than forks, the free strategy gives a host's next task a worker only when one is free: a host whose
stage was started waits while another host's stage_wait holds the only worker for that host's whole wave. Its stage's
lease used to be renewed only by its own host's polls, so it stopped itself ("no controller polled this stage").
The controller's lease keeper (specdec.bench.stage_lease) renews the leases from a process of its own.

The three hosts: both simulated hosts and a second inventory name for the simulated CT200 (its own campaign, lock file
and GPU), so that three hosts share one worker. The stages measure for about 10 s, the lease is 3 s: a stage that
waits for a worker outlives its lease several times over. Without the keeper (its lease set to 0) every stage of this
test failed, "no controller polled this stage for 3 s". How long a stage waits depends on the worker's scheduling, so
the test asserts the outcome, not the overlap.
"""
import json
import os
import sys

import pytest
import testinfra
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
import simhost  # noqa: E402  pylint: disable=wrong-import-position

LEASE = 3
WORKLOAD = {"input_len": 32, "output_len": 64, "num_prompts": 8}
CT200 = {"model": "/models/Qwen3.6-27B", "methods": {"autoregressive": {}}, "workload": WORKLOAD, "concurrency": [1],
         "repeats": 1}
# host: (container, campaign, spec)
HOSTS = {
    "campaign-ct200": ("campaign-ct200", dict(CT200, campaign="forks-a", tp=[{"size": 1, "gpus": [5]}])),
    "campaign-ct200-second": ("campaign-ct200", dict(CT200, campaign="forks-b", tp=[{"size": 1, "gpus": [6]}])),
    "campaign-a100box": ("campaign-a100box", {"campaign": "forks-c", "model": "/data/models/Qwen3.6-27B", "tp": [2],
                                              "methods": {"autoregressive": {}}, "workload": WORKLOAD, "concurrency": [1],
                                              "repeats": 1}),
}


@pytest.fixture(name="ran", scope="module")
def run_with_one_fork(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("forks")
    inventory = tmp / "second.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"sim": {"hosts": {"campaign-ct200-second": {
        "ansible_host": "campaign-ct200", "ansible_connection": "containers.podman.podman",
        "ansible_python_interpreter": "/usr/bin/python3", "sim_profile": "ct200", "specdec_sglang_build": "sglang-ddtree-pr29907",
        "campaign_lock_path": "/var/lib/specdec/campaign-second.lock"}}}}}}))
    extra = tmp / "forks.yml"
    extra.write_text(yaml.safe_dump({
        "campaign_hosts": ",".join(HOSTS), "forks_specs": {host: spec for host, (_box, spec) in HOSTS.items()},
        "campaign_spec": "{{ forks_specs[inventory_hostname] }}",
        "sglang_unit_env": {"SIM_SGLANG_LOAD_SECONDS": "0.5", "SIM_SGLANG_TIME_SCALE": "0.5"},
        "campaign_stage_lease_timeout": LEASE, "bench_stage_poll": 0.5,
        "campaign_preflight": False, "campaign_page_cache_warm": False}))
    rc, out = simhost.playbook(simhost.REPO / "playbooks" / "campaign.yml", "-i", str(inventory), "-f", "1", "-e", f"@{extra}",
                               timeout=900)
    statuses = {}
    for host, (box, spec) in HOSTS.items():
        stage = "tp%d-autoregressive" % (spec["tp"][0]["size"] if isinstance(spec["tp"][0], dict) else spec["tp"][0])
        path = f"/root/bench_results/{spec['campaign']}/{stage}/status.json"
        remote = testinfra.get_host(f"podman://{box}")
        statuses[host] = json.loads(remote.file(path).content_string) if remote.file(path).exists else None
    return {"rc": rc, "out": out, "status": statuses}


def test_every_stage_of_every_host_is_ok_with_one_fork(ran):
    assert ran["rc"] == 0, ran["out"][-4000:]
    for host, status in ran["status"].items():
        assert status is not None and status["status"] == "ok", (host, status)
