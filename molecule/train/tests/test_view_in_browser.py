"""The monitoring page in a real headless Chromium (Debian's, driven by Selenium; no browser download).

The page is reached as a user reaches it: the monitor listens on 127.0.0.1:8080 inside the simulated A100 box,
tests/sim/trainer/port_forward.py carries a port of this machine's loopback there (as `ssh -L` does). Chromium may
resolve no name but 127.0.0.1, so the page must work with no internet. The tests run in order, on one page: the run
is running, its bar advances, new log lines appear, hostile log lines stay text; then the trainer is told to fail
and the page shows the failed state, the one the supervisor recorded. Screenshots of both states are kept in tests/output/train/.
The latest evaluation is placed in the run folder as playbooks/evaluate.yml leaves it (evaluation.json, written aside and
renamed over it): the panel beside the curves shows it, hostile names as text, a bad file as its error, and links to it.
"""
import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import testinfra
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

REPO = Path(__file__).resolve().parents[3]
ARTIFACTS = REPO / "tests" / "output" / "train"
FORWARD = REPO / "tests" / "sim" / "trainer" / "port_forward.py"
RUN = "dflash-sim"
SERVICES = "/var/lib/specdec/services"
FAIL_FILE = "/run/sim-trainer/fail-dflash-sim"
# Every podman exec (one per connection through the forward) is slow on a loaded machine: deadlines are generous,
# and each wait ends as soon as its condition holds.
DEADLINE = 90
HOSTILE_METRIC = "<img src=x onerror=__pwned=3>"
LOG = f"/root/train_runs/{RUN}/train.log"
EVALUATION = f"/root/train_runs/{RUN}/evaluation.json"
HOSTILE_CHECKPOINT = "<img src=x onerror=window.__pwned=4>"
sys.path.insert(0, str(REPO / "plugins" / "module_utils"))
import _train_log  # noqa: E402  pylint: disable=import-error,wrong-import-position


@pytest.fixture(name="box", scope="module")
def podman_host(host):
    return testinfra.get_host(f"podman://{host.backend.get_hostname()}")


@pytest.fixture(name="url", scope="module")
def forwarded_url(host):
    forward = subprocess.Popen(
        [sys.executable, str(FORWARD), host.backend.get_hostname(), "8080", "--listen-port", "0"],
        stdout=subprocess.PIPE, text=True)
    try:
        line = forward.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert match, f"port_forward.py did not start: {line!r}"
        yield match.group(0)
    finally:
        forward.terminate()
        forward.wait(timeout=10)


@pytest.fixture(name="page", scope="module")
def chromium_page(url):
    os.environ.setdefault("SE_OFFLINE", "true")
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in (
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1100,900",
        "--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-sync",
        "--disable-component-update", "--disable-default-apps", "--disable-extensions", "--no-proxy-server",
        # the network rule: no name resolves, and only 127.0.0.1 is reachable
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(url)
        yield driver
    finally:
        driver.quit()


def text(page, element_id):
    return page.find_element(By.ID, element_id).text


def wait_for(page, condition, message):
    return WebDriverWait(page, DEADLINE, poll_frequency=0.2).until(lambda driver: condition(), message)


def step(page):
    match = re.match(r"(\d+) / (\d+)", text(page, "step"))
    return (int(match.group(1)), int(match.group(2))) if match else (None, None)


def shot(page, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    assert page.save_screenshot(str(path))
    assert path.stat().st_size > 10000
    return path


def test_page_shows_the_run_running(page):
    wait_for(page, lambda: text(page, "state") == "running" and text(page, "run") == RUN, "the run is not shown running")
    wait_for(page, lambda: text(page, "transport") == "live", "the page is not live (server-sent events)")
    assert step(page)[1] == 4000
    assert page.title == f"Training run {RUN} \u2013 running"


def test_progress_bar_advances(page):
    wait_for(page, lambda: step(page)[0] is not None, "no step shown")
    first_step = step(page)[0]
    first_percent = float(page.find_element(By.ID, "bar").get_attribute("aria-valuenow"))
    wait_for(page, lambda: step(page)[0] >= first_step + 3, "the step does not advance")
    wait_for(page, lambda: float(page.find_element(By.ID, "bar").get_attribute("aria-valuenow")) > first_percent,
             "the bar does not advance")
    width = page.find_element(By.ID, "bar-fill").value_of_css_property("width")
    assert float(width.rstrip("px")) > 0
    # the rate of the tqdm bar (it/s) or of the JSON lines' steps over time (step/s)
    assert re.match(r"\d+\.\d\d (it|step)/s", text(page, "rate")) and re.match(r"\d\d:\d\d", text(page, "eta"))
    assert float(text(page, "loss")) > 0


def test_new_log_lines_appear(page):
    first_count = int(text(page, "line-count"))
    first_last = text(page, "log").splitlines()[-1]
    wait_for(page, lambda: int(text(page, "line-count")) > first_count, "no new log line counted")
    wait_for(page, lambda: text(page, "log").splitlines()[-1] != first_last, "no new log line shown")
    assert '"total_steps": 4000' in text(page, "log")


def test_hostile_log_lines_stay_text(page):
    # The trainer logs them every 20 steps: the page shows them as they are, and no markup comes of them.
    wait_for(page, lambda: "<script>window.__pwned = 1</script>" in text(page, "log"), "the hostile line is not shown")
    assert '<img src=x onerror="window.__pwned = 2">' in text(page, "log")
    log = page.find_element(By.ID, "log")
    assert log.find_elements(By.XPATH, "./*") == []
    assert page.execute_script("return window.__pwned === undefined")
    assert page.find_elements(By.CSS_SELECTOR, "img") == []


def chart(page, metric):
    """The curve of one metric as the page draws it: {points, last_step, last_value}, or None."""
    return page.execute_script("""
        const figure = Array.from(document.querySelectorAll('#charts figure')).find((f) => f.dataset.metric === arguments[0]);
        return figure && figure.dataset.points ? {points: Number(figure.dataset.points), last_step: Number(figure.dataset.lastStep),
            last_value: Number(figure.dataset.lastValue), drawn: figure.querySelector('path.raw').getAttribute('d').length} : null;
    """, metric)


def last_logged_loss(box):
    """(step, loss) of the log's last finished line that carries a loss, read by the parser's line functions."""
    lines, _unfinished = _train_log.split_lines(box.file(LOG).content_string)
    step = found = None
    for raw in lines:
        line = _train_log.clean_line(raw)
        parsed = _train_log.parse_tqdm(line) or _train_log.parse_json(line)
        if parsed is None:
            continue
        step = parsed["step"] if parsed["step"] is not None else step
        if "loss" in parsed["metrics"]:
            found = (step, parsed["metrics"]["loss"])
    return found


def gpu_tiles(page):
    return page.execute_script("""
        return Array.from(document.querySelectorAll('#gpus .gpu')).map((tile) => ({gpu: tile.dataset.gpu,
            util: Number(tile.dataset.util), power: Number(tile.dataset.power), idle: tile.classList.contains('idle'),
            idle_seconds: Number(tile.dataset.idleSeconds),
            text: tile.innerText, spark: tile.querySelectorAll('polyline')[1].getAttribute('points').split(' ').length}));
    """)


def test_the_loss_curve_grows_as_the_trainer_logs(page):
    wait_for(page, lambda: (chart(page, "loss") or {}).get("points", 0) > 2, "no loss curve")
    first = chart(page, "loss")
    assert first["drawn"] > 10
    wait_for(page, lambda: chart(page, "loss")["last_step"] > first["last_step"] + 2, "the loss curve does not grow")
    assert chart(page, "loss")["points"] > first["points"]
    # the JSON lines' learning rate too: every numeric metric has its curve
    wait_for(page, lambda: chart(page, "lr") is not None, "no lr curve")
    assert text(page, "points") != "0"


def test_hostile_metric_names_stay_text(page):
    wait_for(page, lambda: chart(page, HOSTILE_METRIC) is not None, "the hostile metric has no curve")
    names = [node.text for node in page.find_elements(By.CSS_SELECTOR, "#charts .metric-name")]
    assert HOSTILE_METRIC in names
    assert page.find_elements(By.CSS_SELECTOR, "#charts img, #charts b, img") == []
    assert page.execute_script("return window.__pwned === undefined")
    # a value that is no number (grad_norm "<b>NaN</b>") makes no point at all
    assert chart(page, "grad_norm") is None


def test_gpu_tiles_show_the_simulated_load(page):
    # the run's GPUs: the target's 0,1 and the trainer's 2,3 (CUDA_VISIBLE_DEVICES of its definition)
    wait_for(page, lambda: len(gpu_tiles(page)) == 4, "the run's four GPUs are not shown")
    assert sorted(tile["gpu"] for tile in gpu_tiles(page)) == ["0", "1", "2", "3"]
    wait_for(page, lambda: all(tile["power"] > 0 for tile in gpu_tiles(page)), "a GPU shows no power")
    # the trainer's GPUs draw far above the A100s' idle 33-38 W while it trains (the simulated power model), run
    # kernels all the time (utilization from that load), and hold the 30000 MiB its SIM_GPU_MEMORY_MIB claims
    wait_for(page, lambda: all(tile["power"] > 100 and tile["util"] > 50 and not tile["idle"]
                               for tile in gpu_tiles(page) if tile["gpu"] in ("2", "3")),
             "the trainer's GPUs do not show its load")
    wait_for(page, lambda: all(tile["spark"] >= 3 for tile in gpu_tiles(page)), "no sparkline history")
    tiles = gpu_tiles(page)
    assert all(re.search(r"\d+ W", tile["text"]) and re.search(r"\d+ %", tile["text"]) for tile in tiles)
    # a GPU at 0% for train_monitor_idle_gpu_seconds (5 here) is highlighted, one busy or idle for less is not
    # (the trainer's GPUs going idle when the run ends: test_page_shows_the_failed_state)
    for tile in gpu_tiles(page):
        assert (tile["util"] == 0 and tile["idle_seconds"] >= 4.9) if tile["idle"] else tile["idle_seconds"] < 5.1, tile
        assert ("idle for" in tile["text"]) == tile["idle"]
    for tile in tiles:
        if tile["gpu"] in ("2", "3"):
            used = re.search(r"(\d+\.\d) / 40\.0 GiB", tile["text"])
            assert used and float(used.group(1)) >= 29.2, tile


def test_a_reload_shows_the_whole_history(page):
    before = chart(page, "loss")
    page.refresh()
    wait_for(page, lambda: (chart(page, "loss") or {}).get("points", 0) >= before["points"], "the reload lost the history")
    wait_for(page, lambda: len(gpu_tiles(page)) == 4 and all(tile["spark"] >= 3 for tile in gpu_tiles(page)),
             "the reload lost the GPUs' history")


def test_a_restart_of_the_monitor_keeps_the_whole_history(page, host):
    # the history comes from the run folder (the log and the monitor's GPU history file), not the service's memory:
    # stopped and started again, the monitor serves all of it at once to a reloaded page
    wait_for(page, lambda: min(tile["spark"] for tile in gpu_tiles(page)) >= 20, "too little GPU history to compare")
    before = chart(page, "loss")
    sparks = min(tile["spark"] for tile in gpu_tiles(page))
    for state in ("stopped", "started"):
        done = host.ansible("specdec.bench.service", f"name=specdec-train-monitor.service backend=supervisor "
                            f"state={state} state_dir={SERVICES}", check=False)
        assert not done.get("failed") and (done["service"]["state"] == "running") == (state == "started"), done
    page.refresh()
    # within 10 s: far fewer new samples (1 a second) than the history held, so what is shown was read back
    WebDriverWait(page, 10, poll_frequency=0.2).until(
        lambda _driver: (chart(page, "loss") or {}).get("points", 0) >= before["points"]
        and len(gpu_tiles(page)) == 4 and min(tile["spark"] for tile in gpu_tiles(page)) >= min(sparks, 100) - 2,
        "the restarted monitor lost the history")


def summary(best_name, names=("checkpoint-400", "checkpoint-800"), campaign="dflash-sweep"):
    """An evaluation.json of the contract's shape (playbooks/evaluate.yml writes it): two checkpoints measured on gsm8k and mt-bench, the
    second the best."""
    def measured(speedup, tau):
        return {"tau": tau, "tau_ci_low": tau - 0.1, "tau_ci_high": tau + 0.1, "speedup": speedup,
                "speedup_ci_low": speedup - 0.1, "speedup_ci_high": speedup + 0.1, "concurrency": 1, "temperature": 0.0}
    config = {"host": "a100box", "tp": 2, "method": "dflash", "setting": "n16"}
    checkpoints = [dict(config, step=step, name=name, overall_speedup=speedup,
                        datasets={"gsm8k": measured(speedup, tau), "mt-bench": measured(speedup - 0.2, tau - 0.3)})
                   for step, name, speedup, tau in ((400, names[0], 1.5, 2.5), (800, names[1], 2.25, 3.75))]
    return {"campaign": campaign, "generated": "2026-12-03T21:00:00Z", "run": RUN,
            "best": dict(config, step=800, name=best_name, speedup=2.25, speedup_ci_low=2.15, speedup_ci_high=2.35, tau=3.75,
                         dataset="overall"),
            "checkpoints": checkpoints, "report": "report.md"}


def place_evaluation(box, data):
    """evaluation.json in the run folder as evaluate.yml leaves it: written aside, then renamed over the old one."""
    raw = data if isinstance(data, bytes) else json.dumps(data).encode("utf-8")
    box.run_expect([0], f"printf %s {base64.b64encode(raw).decode()} | base64 -d > {EVALUATION}.part && "
                        f"mv -f {EVALUATION}.part {EVALUATION}")
    return raw


def panel(page):
    """The evaluation panel as the page shows it."""
    return page.execute_script("""
        const panel = document.getElementById('evaluation');
        return {state: panel.dataset.state, text: panel.innerText, elements: panel.querySelectorAll('*').length,
                rows: Array.from(document.querySelectorAll('#evaluation-table tbody tr')).map((row) => ({
                    step: row.dataset.step, best: row.classList.contains('best'), title: row.cells[0].title,
                    cells: Array.from(row.cells).map((cell) => cell.textContent)})),
                link: document.getElementById('evaluation-link').href};
    """)


def test_no_evaluation_yet(page):
    wait_for(page, lambda: panel(page)["state"] == "absent", "the evaluation panel is not there")
    assert "Latest evaluation" in panel(page)["text"]
    assert "No evaluation yet (playbooks/evaluate.yml writes one)" in panel(page)["text"]


def test_the_latest_evaluation_is_shown_next_to_the_loss(page, box, url):
    place_evaluation(box, summary("checkpoint-800"))
    wait_for(page, lambda: text(page, "evaluation-best") == "checkpoint-800 (step 800)", "the best checkpoint is not shown")
    shown = panel(page)
    assert shown["state"] == "present" and "No evaluation yet" not in shown["text"]
    assert text(page, "evaluation-campaign") == f"dflash-sweep \u00b7 run {RUN}"
    assert text(page, "evaluation-speedup") == "2.25\u00d7 [2.15\u20132.35] overall" and text(page, "evaluation-tau") == "3.75"
    assert text(page, "evaluation-config") == "a100box tp2 dflash n16"
    # step -> speedup / tau per dataset, the best row marked
    assert [row["cells"] for row in shown["rows"]] == [
        ["400", "1.50\u00d7 / 2.50", "1.30\u00d7 / 2.20", "1.50\u00d7"],
        ["800", "2.25\u00d7 / 3.75", "2.05\u00d7 / 3.45", "2.25\u00d7"]]
    assert [row["best"] for row in shown["rows"]] == [False, True]
    assert shown["link"] == url + "evaluation.json"
    # beside the loss curve: the panel's top is level with the first chart's, to its right
    boxes = page.execute_script("""
        const chart = document.querySelector('#charts figure').getBoundingClientRect();
        const panel = document.getElementById('evaluation').getBoundingClientRect();
        return {chart_top: chart.top, chart_right: chart.right, panel_top: panel.top, panel_left: panel.left};
    """)
    assert abs(boxes["chart_top"] - boxes["panel_top"]) < 2 and boxes["panel_left"] >= boxes["chart_right"], boxes


def test_a_bad_evaluation_shows_its_error(page, box):
    place_evaluation(box, b'{"campaign": "dflash-sweep", "best": ')
    wait_for(page, lambda: panel(page)["state"] == "error", "a bad evaluation.json is not shown as an error")
    assert text(page, "evaluation-error").startswith("evaluation.json is not valid JSON")
    assert text(page, "transport") == "live" and text(page, "state") == "running"


def test_a_hostile_evaluation_stays_text(page, box):
    place_evaluation(box, summary(HOSTILE_CHECKPOINT, names=("checkpoint-400", HOSTILE_CHECKPOINT),
                                  campaign="<script>window.__pwned = 5</script>"))
    wait_for(page, lambda: text(page, "evaluation-best") == HOSTILE_CHECKPOINT + " (step 800)",
             "the hostile checkpoint name is not shown as text")
    assert text(page, "evaluation-campaign") == f"<script>window.__pwned = 5</script> \u00b7 run {RUN}"
    rows = panel(page)["rows"]
    assert rows[1]["title"] == HOSTILE_CHECKPOINT and rows[1]["best"]
    assert page.find_elements(By.CSS_SELECTOR, "img, #evaluation script") == []
    assert page.execute_script("return window.__pwned === undefined")


def test_page_loads_nothing_from_elsewhere(page, url):
    resources = page.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources and all(name.startswith(url) for name in resources)


def test_screenshot_of_the_running_run(page):
    page.set_window_size(1100, 1750)
    try:
        shot(page, "monitor-running.png")
    finally:
        page.set_window_size(1100, 900)


def test_page_shows_the_failed_state(page, box):
    box.run_test(f"mkdir -p /run/sim-trainer && touch {FAIL_FILE}")
    wait_for(page, lambda: text(page, "state") == "failed", "the page does not show the failed run")
    wait_for(page, lambda: "CUDA out of memory" in text(page, "error"), "the page does not show the error")
    wait_for(page, lambda: "exited with status 1" in text(page, "log"), "the page does not show the exit")
    assert text(page, "unit-detail").startswith("failed/failed/exit-code, exit 1")
    assert text(page, "eta") == "\u2013"
    shot(page, "monitor-failed.png")
    # the run has ended: the curve's last point is the log's last logged loss
    logged = last_logged_loss(box)
    assert logged is not None
    wait_for(page, lambda: (chart(page, "loss")["last_step"], chart(page, "loss")["last_value"]) == logged,
             f"the loss curve does not end at the last logged loss {logged}")
    # the trainer's GPUs stop drawing when it exits: at 0% for train_monitor_idle_gpu_seconds (5) they are highlighted
    wait_for(page, lambda: all(tile["idle"] and tile["util"] == 0 and "idle for" in tile["text"]
                               for tile in gpu_tiles(page) if tile["gpu"] in ("2", "3")),
             "the ended run's idle GPUs are not highlighted")
    for tile in gpu_tiles(page):
        assert (tile["util"] == 0 and tile["idle_seconds"] >= 4.9) if tile["idle"] else tile["idle_seconds"] < 5.1, tile
    # the state the page shows is the supervisor's record of the run's end
    ended = json.loads(box.file(f"{SERVICES}/specdec-train-{RUN}.service/exit.json").content_string)
    assert ended["exit_code"] == 1 and ended["signal"] is None


def test_full_log_is_plain_text(page, url):
    page.get(url + "files/train.log")
    body = page.find_element(By.TAG_NAME, "body")
    assert "<script>window.__pwned = 1</script>" in body.text
    assert page.execute_script("return window.__pwned === undefined")
    assert page.execute_script("return document.contentType") == "text/plain"


def test_the_evaluation_link_serves_the_json(page, url, box):
    placed = json.loads(box.file(EVALUATION).content_string)
    assert placed["best"]["name"] == HOSTILE_CHECKPOINT
    page.get(url + "evaluation.json")
    assert page.execute_script("return document.contentType") == "application/json"
    assert json.loads(page.find_element(By.TAG_NAME, "pre").text) == placed
    assert page.execute_script("return window.__pwned === undefined")
