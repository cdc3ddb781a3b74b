"""The hand-started GPU holder on the A100 box (side_effect.yml): stopped by the campaign `hand-holder`, whose
TP2 stage ran on GPUs 0,1, and running again as the supervisor service specdec-restored-hand-wrapper.service.

The module's teardown stops and removes that service: the files after this one (test_campaign.py first) check that the
host was left as it was, with no supervised service running. pytest runs the files in name order, so this one is first.
"""
import json
import os
import sys

import pytest
import testinfra

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "helpers"))
import simhost  # noqa: E402  pylint: disable=wrong-import-position

BOX = testinfra.get_host("podman://campaign-a100box")
SERVICE = "specdec-restored-hand-wrapper.service"
FOLDER = f"/var/lib/specdec/services/{SERVICE}"
STATUS = "/root/bench_results/hand-holder/tp2-autoregressive/status.json"


def read_json(path):
    return json.loads(BOX.file(path).content_string)


def environ(pid):
    out = BOX.check_output(f"cat /proc/{pid}/environ | tr '\\0' '\\n'")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


@pytest.fixture(name="restored", scope="module")
def restored_service():
    yield read_json(f"{FOLDER}/run.json") if BOX.file(f"{FOLDER}/run.json").exists else None
    # stop it as the supervisor would (SIGTERM to its group), wait for the recorded exit, remove its folder
    run = read_json(f"{FOLDER}/run.json") if BOX.file(f"{FOLDER}/run.json").exists else {}
    if run.get("pgid"):
        BOX.check_output(f"python3 -c 'import os, signal; os.killpg({int(run['pgid'])}, signal.SIGTERM)'")
        simhost.wait_for(lambda: BOX.file(f"{FOLDER}/exit.json").exists, "the restored wrapper to end", timeout=30)
    BOX.run(f"rm -rf {FOLDER}")


def test_the_stage_ran_on_the_gpus_the_holder_had(restored):
    assert restored is not None
    st = read_json(STATUS)
    assert st["status"] == "ok", st


def test_the_wrapper_runs_again_under_its_new_name_holding_gpu0(restored):
    assert simhost.supervised_running(BOX, "specdec-restored-*") == [SERVICE]
    assert restored["pid"] in simhost.gpu_pids(BOX, 0)
    definition = read_json(f"{FOLDER}/service.json")
    assert definition["argv"] == ["/usr/bin/python3", "-m", "sglang.launch_server", "--model-path", "/data/models/Qwen3.6-27B",
                                  "--port", "30100", "--tp-size", "1"]
    assert definition["cwd"] == "/root"
    env = environ(restored["pid"])
    assert env["CUDA_VISIBLE_DEVICES"] == simhost.gpu_uuid(BOX, 0) and env["SIM_GPU_MEMORY_MIB"] == "20000"
    assert env["HAND_WRAPPER_TOKEN"] == "not-for-logs"  # the recorded environment, carried over
    assert BOX.run("curl -sf http://127.0.0.1:30100/health_generate || "
                   "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:30100/health_generate\")'").rc == 0


def test_the_hand_started_process_is_gone_and_the_record_with_it(restored):
    # only the restored one matches the command line ([s]: not the shell that runs pgrep)
    pids = BOX.check_output("pgrep -f '[s]glang.launch_server.*--port 30100' || true").split()
    assert [int(pid) for pid in pids] == [restored["pid"]]
    assert not BOX.file("/var/lib/specdec/conflicts/hand-holder.json").exists
    assert not BOX.file("/var/lib/specdec/campaign.lock").exists
