# -*- coding: utf-8 -*-
# Copyright: (c) 2026, specdec.bench developers
# SPDX-License-Identifier: GPL-3.0-or-later
"""Forward a port on this machine's loopback to a port on a simulated host's loopback, as `ssh -L` does.

    python3 tests/sim/trainer/port_forward.py specdec-demo-a100box 8080 --listen-port 8080
    # then open http://127.0.0.1:8080/ here

The monitoring page listens on 127.0.0.1:8080 inside the simulated A100 box, as on the real one, so it cannot be
published as a container port; like an SSH tunnel, each connection is carried by a `podman exec` into the
container, which opens its own connection to the port there. Standard library only. Prints
`listening on http://127.0.0.1:PORT/` once ready (PORT is the one chosen with --listen-port 0).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import threading

# Runs inside the container: one connection to 127.0.0.1:PORT, its bytes to stdout, stdin's bytes to it.
RELAY = r'''
import os, socket, sys, threading
conn = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
def upstream():
    while True:
        data = os.read(0, 65536)
        if not data:
            break
        conn.sendall(data)
    try:
        conn.shutdown(socket.SHUT_WR)
    except OSError:
        pass
threading.Thread(target=upstream, daemon=True).start()
while True:
    data = conn.recv(65536)
    if not data:
        break
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
'''


def carry(client, container, port, podman):
    relay = subprocess.Popen([podman, 'exec', '-i', container, 'python3', '-c', RELAY, str(port)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)

    def upstream():
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                relay.stdin.write(data)
        except OSError:
            pass
        finally:
            try:
                relay.stdin.close()
            except OSError:
                pass

    threading.Thread(target=upstream, daemon=True).start()
    try:
        while True:
            data = relay.stdout.read(65536)
            if not data:
                break
            client.sendall(data)
    except OSError:
        pass
    finally:
        client.close()
        relay.stdout.close()
        if relay.poll() is None:
            relay.terminate()
        relay.wait()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('container', help='the podman container (the simulated host)')
    parser.add_argument('port', type=int, help='the port on the container\'s 127.0.0.1')
    parser.add_argument('--listen-port', type=int, default=8080, help='the port on this machine\'s 127.0.0.1 (0: any)')
    parser.add_argument('--podman', default='podman')
    args = parser.parse_args(argv)
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(('127.0.0.1', args.listen_port))
    server.listen(64)
    print('listening on http://127.0.0.1:%d/' % server.getsockname()[1], flush=True)
    try:
        while True:
            client, _address = server.accept()
            threading.Thread(target=carry, args=(client, args.container, args.port, args.podman), daemon=True).start()
    except KeyboardInterrupt:
        return 0
    finally:
        server.close()


if __name__ == '__main__':
    sys.exit(main())
