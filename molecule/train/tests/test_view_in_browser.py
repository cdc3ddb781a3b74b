"""The monitoring page in a real headless Chromium (Debian's, driven by Selenium; no browser download).

The page is reached as a user reaches it: the monitor listens on 127.0.0.1:8080 inside the simulated A100 box,
tests/sim/trainer/port_forward.py carries a port of this machine's loopback there (as `ssh -L` does). Chromium may
resolve no name but 127.0.0.1, so the page must work with no internet. The tests run in order, on one page: the run
is running, its bar advances, new log lines appear, hostile log lines stay text; then the trainer is told to fail
and the page shows the failed state, the one the supervisor recorded. Screenshots of both states are kept in tests/output/train/.
"""
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


def test_page_loads_nothing_from_elsewhere(page, url):
    resources = page.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources and all(name.startswith(url) for name in resources)


def test_screenshot_of_the_running_run(page):
    shot(page, "monitor-running.png")


def test_page_shows_the_failed_state(page, box):
    box.run_test(f"mkdir -p /run/sim-trainer && touch {FAIL_FILE}")
    wait_for(page, lambda: text(page, "state") == "failed", "the page does not show the failed run")
    wait_for(page, lambda: "CUDA out of memory" in text(page, "error"), "the page does not show the error")
    wait_for(page, lambda: "exited with status 1" in text(page, "log"), "the page does not show the exit")
    assert text(page, "unit-detail").startswith("failed/failed/exit-code, exit 1")
    assert text(page, "eta") == "\u2013"
    shot(page, "monitor-failed.png")
    # the state the page shows is the supervisor's record of the run's end
    ended = json.loads(box.file(f"{SERVICES}/specdec-train-{RUN}.service/exit.json").content_string)
    assert ended["exit_code"] == 1 and ended["signal"] is None


def test_full_log_is_plain_text(page, url):
    page.get(url + "files/train.log")
    body = page.find_element(By.TAG_NAME, "body")
    assert "<script>window.__pwned = 1</script>" in body.text
    assert page.execute_script("return window.__pwned === undefined")
    assert page.execute_script("return document.contentType") == "text/plain"
