"""Stand-in for the get-pip bootstrap script that ansible-test downloads from a host CI cannot reach.

ansible-test runs it (through runpy) with pip's install arguments, in a virtualenv made without pip:
bootstrap the pip bundled with Python, then let it install what was asked (from PyPI).
"""
import ensurepip
import os
import subprocess
import sys

ensurepip.bootstrap()
args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
# ansible-test runs this with a reduced environment: keep the machine's CA bundle (a TLS-inspecting proxy may sit in between).
for cert in (os.environ.get('PIP_CERT'), os.environ.get('SSL_CERT_FILE'), '/etc/ssl/certs/ca-certificates.crt'):
    if cert and os.path.exists(cert):
        args = ['--cert', cert] + args
        break
sys.exit(subprocess.call([sys.executable, '-m', 'pip', 'install'] + args))
