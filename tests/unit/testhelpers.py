"""What several unit tests share, defined once: polling a condition with a deadline, a free port, stopping a process,
the LaTeX report's structure, and a playbook run on localhost with the checkout's collection.

tests/unit/conftest.py puts this folder on sys.path (pytest's prepend import mode), so a test imports it as
``from testhelpers import wait_until``.
"""

import os
import signal
import socket
import subprocess
import sys
import time

DEADLINE_S = 15.0
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def wait_until(predicate, what, timeout=DEADLINE_S, interval=0.02):
    """predicate()'s first true value, polled every interval seconds; AssertionError naming what after timeout s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError('timed out waiting for %s (%ss)' % (what, timeout))


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def stop_process(proc, timeout=DEADLINE_S):
    """SIGTERM a subprocess.Popen still running, SIGKILL it after timeout seconds; reaped either way."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def latex_structure(tex, booktabs=True):
    """Every tabular's rows have as many cells as its column spec (and it is booktabs, unless booktabs=False);
    environments and braces balance."""
    assert tex.count(r'\begin{table}') == tex.count(r'\end{table}') > 0
    assert tex.count('{') - tex.count(r'\{') == tex.count('}') - tex.count(r'\}')
    for block in tex.split(r'\begin{tabular}{')[1:]:
        spec, body = block.split('}', 1)
        body = body.split(r'\end{tabular}')[0]
        assert not booktabs or r'\toprule' in body and r'\midrule' in body and r'\bottomrule' in body
        for line in body.splitlines():
            if line.endswith(r'\\') and 'multicolumn' not in line:
                assert line.count(' & ') == len(spec) - 1, line


def local_play(tasks, **keys):
    """A playbook of one play on localhost, over the local connection, with this interpreter; keys add to the play."""
    play = {'hosts': 'localhost', 'gather_facts': False, 'connection': 'local',
            'vars': {'ansible_python_interpreter': sys.executable}, 'tasks': tasks}
    play.update(keys)
    return [play]


def run_playbook(path, *options, timeout=180):
    """ansible-playbook on localhost with the checkout's ansible.cfg and collection; options go before the playbook.
    The test fails with the playbook's output when it fails."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'), ANSIBLE_LOCALHOST_WARNING='false',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='false',
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, '.cache', 'collections'))
    result = subprocess.run([os.path.join(REPO, '.venv', 'bin', 'ansible-playbook'), '-i', 'localhost,', *options, str(path)],
                            capture_output=True, text=True, cwd=REPO, env=env, timeout=timeout, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result
