"""molecule/collect: the controller's copy of the campaign against the host's files, and the report made from it.

converge.yml ran two stages, collected them and wrote the report; idempotence collected again (no change);
side_effect.yml ran the autoregressive stage again, collected and reported again.
"""
import csv
import hashlib
import json
import os
import pathlib

import pytest
import testinfra

CAMPAIGN = "collect-test"
HOST_ROOT = f"/root/bench_results/{CAMPAIGN}"
EPHEMERAL = pathlib.Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
COLLECTED = EPHEMERAL / "results" / "collect-ct200" / CAMPAIGN
REPORT = EPHEMERAL / "reports" / CAMPAIGN
RERUN = "tp1-autoregressive"
STAGES = ["tp1-autoregressive", "tp1-ddtree-b32-k4"]
CONCURRENCY = [1, 4]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(name="host", scope="module")
def podman_host(host):
    """The same container through `podman exec` directly, much faster than molecule's Ansible backend."""
    return testinfra.get_host(f"podman://{host.backend.get_hostname()}")


@pytest.fixture(name="host_sums", scope="module")
def host_checksums(host):
    """{relative path: sha256} of every file of the campaign on the host, by the host's own sha256sum."""
    out = host.check_output(f"cd {HOST_ROOT} && find . -type f -print0 | sort -z | xargs -0 sha256sum")
    sums = {}
    for line in out.splitlines():
        digest, path = line.split(None, 1)
        sums[path[2:]] = digest
    return sums


def controller_files():
    return sorted(str(p.relative_to(COLLECTED)) for p in COLLECTED.rglob("*") if p.is_file() and p.relative_to(COLLECTED).parts[0] != ".collect")


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_host_file_is_on_the_controller_with_the_same_checksum(host_sums):
    assert len(host_sums) > 20
    for path, digest in host_sums.items():
        assert sha256(COLLECTED / path) == digest, path


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("concurrency", CONCURRENCY)
def test_the_telemetry_survives_collect(host_sums, stage, concurrency):
    name = f"{stage}/telemetry-random-t0-c{concurrency}-r1.csv"
    assert name in host_sums
    collected = COLLECTED / name
    assert sha256(collected) == host_sums[name]
    rows = list(csv.reader(collected.read_text().splitlines()))
    assert rows[0][:3] == ["t_s", "uuid", "power_w"] and len(rows) > 1
    result = json.loads((COLLECTED / stage / "result-random-t0-c{}-r1.json".format(concurrency)).read_text())
    assert result["telemetry_file"] == os.path.basename(name) and result["energy_method"] == "counter"


def test_nothing_duplicated_or_extra_on_the_controller(host_sums):
    assert controller_files() == sorted(host_sums)


def test_the_first_copy_of_a_rerun_stage_is_kept_as_evidence(host_sums):
    superseded = sorted((COLLECTED / ".collect" / "superseded").iterdir())
    assert len(superseded) == 1, "one collect found changed files: the one after side_effect's rerun"
    kept = superseded[0]
    status = json.loads((kept / RERUN / "status.json").read_text())
    current = json.loads((COLLECTED / RERUN / "status.json").read_text())
    assert status["status"] == current["status"] == "ok"
    assert status["finished"] <= current["started"]
    # only the rerun stage's files changed; the other stage and the plan were not superseded
    assert {p.relative_to(kept).parts[0] for p in kept.rglob("*") if p.is_file()} == {RERUN}
    for path in kept.rglob("*"):
        if path.is_file():
            assert sha256(path) != host_sums[str(path.relative_to(kept))]


def test_the_manifest_of_the_last_collect_matches_the_host(host_sums):
    manifest = json.loads((COLLECTED / ".collect" / "manifest.json").read_text())
    assert {entry["path"]: entry["sha256"] for entry in manifest["files"]} == host_sums


def test_no_archive_is_left_anywhere(host):
    assert host.run("ls /var/tmp/specdec-collect-* 2>/dev/null").stdout == ""
    assert not list((EPHEMERAL / "results" / ".incoming").glob("*"))


def raw_throughput(host, stage, concurrency):
    """Output tokens of the completed requests over the run's duration, from the host's raw per-request records."""
    # a campaign without workload.datasets runs random prompts at temperature 0: RESULTS_LAYOUT's raw-{dataset}-t{T}-c{c}
    raw = f"{HOST_ROOT}/{stage}/raw-random-t0-c{concurrency}-r1.jsonl"
    records = [json.loads(line) for line in host.file(raw).content_string.splitlines()]
    measured = [r for r in records if not r["warmup"]]
    done = [r for r in measured if r["success"]]
    assert len(done) == 8
    return sum(r["output_tokens"] for r in done) / max(r["end_s"] for r in measured)


def report_rows():
    with open(REPORT / "results.csv", newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_report_rows_are_recomputed_from_the_raw_records(host):
    rows = {(row["stage"], int(row["concurrency"])): row for row in report_rows()}
    assert sorted(rows) == sorted((stage, c) for stage in STAGES for c in CONCURRENCY)
    for (stage, concurrency), row in rows.items():
        assert row["status"] == "ok" and row["host"] == "collect-ct200" and row["tp"] == "1"
        assert row["dataset"] == "random" and float(row["temperature"]) == 0.0
        assert float(row["output_throughput"]) == pytest.approx(raw_throughput(host, stage, concurrency), rel=1e-6)
        assert row["gpu_name"] == "NVIDIA RTX PRO 6000 Blackwell Server Edition" and row["driver"]
        assert row["model"] == "/models/Qwen3.6-27B"
    for concurrency in CONCURRENCY:
        ddtree, base = rows[("tp1-ddtree-b32-k4", concurrency)], rows[("tp1-autoregressive", concurrency)]
        assert float(ddtree["speedup"]) == pytest.approx(float(ddtree["output_throughput"]) / float(base["output_throughput"]))
        assert float(ddtree["speedup"]) > 1 and float(ddtree["accept_length"]) > 1
        assert base["accept_length"] == "" and float(base["speedup"]) == pytest.approx(1.0)


def test_report_files_are_written(host):
    text = (REPORT / "report.md").read_text()
    assert "## Host `collect-ct200`" in text and "### TP1" in text and "DDTree B=32 k=4" in text
    version = json.loads(host.file(f"{HOST_ROOT}/{RERUN}/server_info.json").content_string)["version"]
    assert f"SGLang {version}" in text and "CUDA 13.0" in text
    assert r"\toprule" in (REPORT / "report.tex").read_text()
    for name in ("speedup_vs_budget-collect-ct200.png", "accept_length_vs_budget-collect-ct200.png",
                 "throughput_vs_concurrency-collect-ct200.png"):
        data = (REPORT / name).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 5000, name
        assert f"]({name})" in text


def test_the_lossy_method_is_marked_beside_its_speedup_with_a_footnote():
    """The emulator's lossy fault changed DDTree's tokens from position 8 on at T=0: every DDTree request differs from
    AR's there while AR is identical to itself across concurrencies, so the report flags it and marks its speedup."""
    with open(REPORT / "results-equality.csv", newline="", encoding="utf-8") as handle:
        equality = {(row["stage"], int(row["concurrency"])): row for row in csv.DictReader(handle)}
    for concurrency in CONCURRENCY:
        floor, lossy = equality[("tp1-autoregressive", concurrency)], equality[("tp1-ddtree-b32-k4", concurrency)]
        # AR against its own first run at c=1: one repeat there, so compared at c=4 only
        assert floor["flagged"] == "false" and floor["identical_share"] == ("" if concurrency == 1 else "1.0")
        assert float(lossy["floor_share"]) == 1.0
        assert int(lossy["compared"]) == 8 and float(lossy["identical_share"]) == 0.0 and lossy["flagged"] == "true"
        assert float(lossy["diverge_median"]) == 8.0 and float(lossy["identical_32_share"]) == 0.0
    text = (REPORT / "report.md").read_text()
    settings = text[text.index("### TP1"):]
    assert "DDTree B=32 k=4 ¶" in settings and "¶ its outputs at T=0 differ from AR" in settings
    assert "## Lossless and accurate" in text and "tp1-ddtree-b32-k4" in text[text.index("## Lossless and accurate"):]
    assert all(row["setting"].endswith("¶") == (row["stage"] == "tp1-ddtree-b32-k4") for row in report_rows())
