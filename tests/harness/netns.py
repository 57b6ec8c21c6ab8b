"""Test hosts in network namespaces, joined by a bridge, whose links can be cut and healed.

A network partition cannot be simulated on 127.0.0.1 alone: every process shares one
loopback. Instead each "host" is a network namespace with one veth interface plugged into a
bridge that lives in a hub namespace of its own, so the machine's real interfaces are never
touched. Cutting a host sets its bridge port down: its processes keep running (unlike kill -9)
but can reach nobody, exactly like a switch failure. Addresses are from a subnet that only
these namespaces use; nothing outside them is ever contacted.

Needs root and iproute2 (``ip netns``); :func:`netns_unavailable_reason` says why not.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field

__all__ = ["Host", "NetworkLab", "netns_unavailable_reason"]


def netns_unavailable_reason() -> str | None:
    """None when namespaces can be created here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (the `ip` command) is not installed"
    probe = f"odprobe{uuid.uuid4().hex[:6]}"
    result = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if result.returncode != 0:
        return f"`ip netns add` failed: {result.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")


@dataclass(frozen=True)
class Host:
    name: str
    netns: str
    address: str
    bridge_port: str  # the veth end in the hub namespace; down = cut off

    def command(self, argv: list[str]) -> list[str]:
        """``argv`` run inside this host's namespace (``ip netns exec`` execs in place, so
        the PID of the started process is the PID of ``argv`` itself)."""
        return ["ip", "netns", "exec", self.netns, *argv]


@dataclass
class NetworkLab:
    """A bridge plus hosts. Use as a context manager so namespaces are always removed."""

    subnet_prefix: str = "10.213.77"
    lab_id: str = field(default_factory=lambda: uuid.uuid4().hex[:5])
    hosts: dict[str, Host] = field(default_factory=dict)

    @property
    def hub(self) -> str:
        return f"od{self.lab_id}hub"

    def __enter__(self) -> NetworkLab:
        _ip("netns", "add", self.hub)
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_host(self, name: str) -> Host:
        index = len(self.hosts) + 1
        netns = f"od{self.lab_id}{name}"[:15]
        port = f"p{self.lab_id}{index}"[:15]
        peer = f"e{self.lab_id}{index}"[:15]
        address = f"{self.subnet_prefix}.{index}"
        _ip("netns", "add", netns)
        _ip("-n", netns, "link", "set", "lo", "up")
        _ip("-n", self.hub, "link", "add", port, "type", "veth", "peer", "name", peer)
        _ip("-n", self.hub, "link", "set", peer, "netns", netns)
        _ip("-n", self.hub, "link", "set", port, "master", "br0")
        _ip("-n", self.hub, "link", "set", port, "up")
        _ip("-n", netns, "addr", "add", f"{address}/24", "dev", peer)
        _ip("-n", netns, "link", "set", peer, "up")
        host = Host(name, netns, address, port)
        self.hosts[name] = host
        return host

    def cut(self, host: Host) -> None:
        """Disconnect ``host`` from every other host (its processes keep running)."""
        _ip("-n", self.hub, "link", "set", host.bridge_port, "down")

    def heal(self, host: Host) -> None:
        _ip("-n", self.hub, "link", "set", host.bridge_port, "up")

    def close(self) -> None:
        for host in self.hosts.values():
            subprocess.run(["ip", "netns", "del", host.netns], capture_output=True)
        self.hosts.clear()
        subprocess.run(["ip", "netns", "del", self.hub], capture_output=True)
