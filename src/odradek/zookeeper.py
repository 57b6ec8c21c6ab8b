"""Run the real Apache ZooKeeper server shipped inside the ``pyspark`` wheel.

odradek coordinates through ZooKeeper exactly as Kafka did in ZooKeeper mode. For a laptop
or a test we do not want a separate download: pyspark's wheel carries ``zookeeper-*.jar``,
``zookeeper-jute-*.jar`` and their dependencies in ``pyspark/jars/``, so we run
``org.apache.zookeeper.server.ZooKeeperServerMain`` from there with the machine's Java 17+.
Production points ``zookeeper.connect`` at a real ensemble instead.

The admin HTTP server is disabled (it would take port 8080). Four-letter-word commands are
disabled by ZooKeeper's defaults, so readiness is checked by a real ZooKeeper handshake, not
``ruok``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["JavaNotFound", "ZooKeeperCommand", "ZooKeeperJarsNotFound", "zookeeper_command",
           "zookeeper_ready"]

MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
MIN_JAVA = 17


class JavaNotFound(RuntimeError):
    """No usable Java 17+ runtime: ZooKeeper cannot start."""


class ZooKeeperJarsNotFound(RuntimeError):
    """pyspark (which carries ZooKeeper's jars) is not installed."""


@dataclass(frozen=True)
class ZooKeeperCommand:
    argv: list[str]
    data_dir: Path
    port: int


def find_java() -> str:
    """Path of a Java 17+ executable (``JAVA_HOME`` first, then ``PATH``)."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    found = shutil.which("java")
    if found:
        candidates.append(found)
    for java in candidates:
        version = _java_major_version(java)
        if version is not None and version >= MIN_JAVA:
            return java
    raise JavaNotFound(
        f"ZooKeeper needs Java {MIN_JAVA}+ and none was found "
        "(install it with `apt-get install openjdk-17-jre-headless` or set JAVA_HOME)"
    )


def _java_major_version(java: str) -> int | None:
    try:
        result = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def zookeeper_jars_dir() -> Path:
    """The ``pyspark/jars`` directory holding ZooKeeper's jars."""
    try:
        import pyspark  # optional: the ZooKeeper jars come with the spark extra
    except ImportError:
        raise ZooKeeperJarsNotFound(
            "the embedded ZooKeeper comes from the pyspark wheel: pip install 'odradek[spark]'"
        ) from None
    jars = Path(pyspark.__file__).parent / "jars"
    if not any(jars.glob("zookeeper-[0-9]*.jar")):
        raise ZooKeeperJarsNotFound(f"no zookeeper-*.jar in {jars}")
    return jars


def zookeeper_command(
    port: int, data_dir: Path, *, heap_mb: int = 256, tick_time_ms: int = 2000
) -> ZooKeeperCommand:
    """The ``java`` command line that serves ZooKeeper on ``port`` with data in ``data_dir``.

    ``tick_time_ms`` is ZooKeeper's time unit: sessions may last 2 to 20 ticks, so 2000 (the
    value of ZooKeeper's sample configuration) lets brokers ask for sessions down to 4 s.
    """
    java = find_java()
    jars = zookeeper_jars_dir()
    data_dir.mkdir(parents=True, exist_ok=True)
    argv = [
        java,
        f"-Xmx{heap_mb}m",
        "-XX:+UseSerialGC",
        "-Dzookeeper.admin.enableServer=false",
        "-Dzookeeper.4lw.commands.whitelist=srvr,ruok,mntr",
        "-Dlog4j2.level=WARN",
        "-cp",
        f"{jars}/*",
        MAIN_CLASS,
        str(port),
        str(data_dir),
        str(tick_time_ms),
    ]
    return ZooKeeperCommand(argv=argv, data_dir=data_dir, port=port)


def zookeeper_ready(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when a ZooKeeper server at host:port completes a session handshake.

    Sends a ConnectRequest (protocol version 0, zxid 0, timeout 2 s, session 0, empty
    password) and expects a ConnectResponse carrying a non-zero session id.
    """
    body = struct.pack(">iqiqi", 0, 0, 2000, 0, 16) + b"\0" * 16 + b"\0"
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(struct.pack(">i", len(body)) + body)
            header = _recv_exactly(sock, 4)
            (length,) = struct.unpack(">i", header)
            if not 0 < length < 1024:
                return False
            reply = _recv_exactly(sock, length)
            _protocol, _timeout, session_id = struct.unpack_from(">iiq", reply)
            return session_id != 0
    except (OSError, struct.error):
        return False


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return data


def run_foreground(port: int, data_dir: Path) -> int:
    """Run ZooKeeper in the foreground until it exits or we get SIGTERM/SIGINT."""
    command = zookeeper_command(port, data_dir)
    process = subprocess.Popen(command.argv)

    def forward(signum: int, _frame: object) -> None:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    deadline = time.monotonic() + 60
    announced = False
    while process.poll() is None:
        if not announced and zookeeper_ready("127.0.0.1", port):
            print(f"ZooKeeper serving on 127.0.0.1:{port} (data in {data_dir})",
                  file=sys.stderr, flush=True)
            announced = True
        if not announced and time.monotonic() > deadline:
            print("ZooKeeper did not become ready within 60 s", file=sys.stderr)
            process.kill()
            break
        try:
            process.wait(timeout=0.2 if not announced else None)
        except subprocess.TimeoutExpired:
            continue
    code = process.wait()
    # ZooKeeper's JVM exits 143 on SIGTERM: that is our clean stop.
    return 0 if code in (0, 143, -signal.SIGTERM) else code
