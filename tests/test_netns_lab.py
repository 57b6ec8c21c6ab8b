"""The network-namespace lab really partitions hosts: cut stops traffic, heal restores it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.harness import wait_until
from tests.harness.netns import NetworkLab, netns_unavailable_reason

reason = netns_unavailable_reason()
pytestmark = pytest.mark.skipif(reason is not None, reason=reason or "")

SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 7000)); s.listen(); print("ready", flush=True)
while True:
    c, _ = s.accept(); c.sendall(b"pong"); c.close()
"""

CLIENT = """
import socket, sys
try:
    with socket.create_connection((sys.argv[1], 7000), timeout=1) as c:
        print(c.recv(4).decode())
except OSError as e:
    print("unreachable", e)
"""


def _ping(lab: NetworkLab, source: str, target_address: str) -> str:
    host = lab.hosts[source]
    result = subprocess.run(host.command([sys.executable, "-c", CLIENT, target_address]),
                            capture_output=True, text=True, timeout=20)
    return result.stdout.strip()


def test_cut_isolates_a_host_and_heal_reconnects_it() -> None:
    with NetworkLab() as lab:
        server_host = lab.add_host("a")
        lab.add_host("b")
        server = subprocess.Popen(server_host.command([sys.executable, "-c", SERVER,
                                                       server_host.address]),
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None and server.stdout.readline().strip() == "ready"
            wait_until(lambda: _ping(lab, "b", server_host.address) == "pong", 10,
                       "b to reach a's server over the bridge")
            lab.cut(server_host)
            assert _ping(lab, "b", server_host.address).startswith("unreachable")
            assert server.poll() is None, "a cut host keeps running"
            lab.heal(server_host)
            wait_until(lambda: _ping(lab, "b", server_host.address) == "pong", 10,
                       "b to reach a again after heal")
        finally:
            server.kill()
            server.wait(10)
