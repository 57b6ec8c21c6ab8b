"""Apache Kafka 3.9 (ZooKeeper mode) as a reference peer: jars from Maven Central, a broker
subprocess, and Kafka's Java command-line tools.

The jars come from ``bench/apache-kafka/pom.xml`` through ``mvn dependency:copy-dependencies``
into ``.cache/apache-kafka/<version>/libs`` (once; later calls reuse them). Everything runs
as ``java -cp 'libs/*' <main class>``, the same way Kafka's own shell scripts do, so no
distribution tarball is needed. ``ODRADEK_APACHE_KAFKA_LIBS`` may point at an existing
``libs`` directory (e.g. an unpacked Kafka distribution) instead.

Process handling (stop by PID, log tails, bounded waits) and ZooKeeper come from
:mod:`odradek.local_cluster`, so benchmarks can use this module as well as tests.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

if not __package__:  # run as a script: make ``tests.harness`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from odradek.local_cluster import (
    ManagedProcess,
    WaitTimeout,
    ZooKeeperProcess,
    free_port,
    wait_until,
)
from tests.harness.maven import COMPLETE_MARKER, copy_dependencies

KAFKA_VERSION = "3.9.2"
REPO_ROOT = Path(__file__).resolve().parents[2]
POM = REPO_ROOT / "bench" / "apache-kafka" / "pom.xml"
CACHE_ROOT = REPO_ROOT / ".cache" / "apache-kafka"
LIBS_ENV = "ODRADEK_APACHE_KAFKA_LIBS"

# Main classes of the 3.9 command-line tools (read from the jars: several moved from the
# Scala `kafka.*` packages to `org.apache.kafka.tools` during 3.x).
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONSOLE_PRODUCER = "kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
DUMP_LOG_SEGMENTS = "kafka.tools.DumpLogSegments"
PRODUCER_PERFORMANCE = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERFORMANCE = "org.apache.kafka.tools.ConsumerPerformance"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"
REASSIGN_PARTITIONS = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand"
GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell"

BROKER_HEAP = "-Xmx1G"
TOOL_HEAP = "-Xmx512M"
# What kafka-run-class.sh passes by default (KAFKA_JVM_PERFORMANCE_OPTS).
JVM_PERFORMANCE_OPTS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)

BROKER_LOG4J = """\
log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log_file}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.KafkaServer=INFO
log4j.logger.kafka.controller=INFO
log4j.logger.state.change.logger=WARN
# The controller connects to its own broker before the listener accepts: expected noise.
log4j.logger.kafka.controller.RequestSendThread=ERROR
log4j.logger.org.apache.kafka.clients.NetworkClient=ERROR
"""

TOOL_LOG4J = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


class ApacheKafkaUnavailable(RuntimeError):
    """Java or Maven (or Maven Central) is missing, so the reference cannot run."""


def _kafka_request(host: str, port: int, api_key: int, version: int, body: bytes,
                   timeout: float) -> bytes:
    """One request/response with a non-flexible (v1) request header; returns the body."""
    client_id = b"odradek-harness"
    header = struct.pack(">hhih", api_key, version, 7, len(client_id)) + client_id
    payload = header + body
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", _recv_exact(s, 4))[0]
        data = _recv_exact(s, size)
    if struct.unpack(">i", data[:4])[0] != 7:
        raise OSError("correlation id mismatch")
    return data[4:]


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return bytes(buf)


def broker_serving(host: str, port: int, timeout: float = 2.0) -> bool:
    """True once the broker answers ApiVersions v0 without error and Metadata v1 lists at
    least one broker (i.e. it can route clients, not merely accept TCP connections)."""
    try:
        body = _kafka_request(host, port, 18, 0, b"", timeout)
        if struct.unpack(">h", body[:2])[0] != 0:
            return False
        # Metadata v1 with a null topic array (= no topics): brokers array comes first.
        body = _kafka_request(host, port, 3, 1, struct.pack(">i", 0), timeout)
        return struct.unpack(">i", body[:4])[0] >= 1
    except (OSError, struct.error):
        return False


def java_available() -> str | None:
    """None if a usable `java` is on PATH, else the reason."""
    java = shutil.which("java")
    if java is None:
        return "java is not installed (apt-get install openjdk-17-jre-headless)"
    return None


class ApacheKafka:
    """Locates (fetching once if needed) the Apache Kafka jars and runs Kafka's main classes."""

    def __init__(self, version: str = KAFKA_VERSION, cache_root: Path = CACHE_ROOT) -> None:
        self.version = version
        self.cache_root = cache_root
        self.unavailable_reason: str | None = None
        override = os.environ.get(LIBS_ENV)
        self._libs = Path(override) if override else cache_root / version / "libs"

    @property
    def libs_dir(self) -> Path:
        return self._libs

    def _complete(self) -> bool:
        if os.environ.get(LIBS_ENV):
            return any(self._libs.glob("kafka_2.13-*.jar"))
        return (self._libs / COMPLETE_MARKER).exists()

    def fetch_jars(self) -> Path | None:
        """The libs directory, downloading it with Maven on first use. None (and
        ``unavailable_reason`` set) when Java, Maven or Maven Central is unavailable."""
        reason = java_available()
        if reason is None and self._complete():
            return self._libs
        if reason is None and os.environ.get(LIBS_ENV):
            reason = f"{LIBS_ENV}={self._libs} holds no kafka_2.13 jar"
        if reason is None:
            reason = self._mvn_copy_dependencies()
        self.unavailable_reason = reason
        return None if reason else self._libs

    def _mvn_copy_dependencies(self) -> str | None:
        return copy_dependencies(POM, self._libs, properties={"kafka.version": self.version},
                                 expect="kafka_2.13-*.jar")

    def require(self) -> Path:
        libs = self.fetch_jars()
        if libs is None:
            raise ApacheKafkaUnavailable(self.unavailable_reason or "unavailable")
        return libs

    def java_command(self, main_class: str, args: Sequence[str] = (),
                     jvm_opts: Sequence[str] = ()) -> list[str]:
        libs = self.require()
        return ["java", *jvm_opts, "-cp", f"{libs}/*", main_class, *args]

    def run_java_tool(self, main_class: str, args: Sequence[str], timeout: float = 120.0,
                      input: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run one of Kafka's command-line tools to completion (killed after ``timeout``)."""
        conf_dir = self.libs_dir.parent / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        log4j = conf_dir / "tools-log4j.properties"
        if not log4j.exists():
            log4j.write_text(TOOL_LOG4J)
        cmd = self.java_command(
            main_class, args,
            [TOOL_HEAP, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             f"-Dlog4j.configuration=file:{log4j}"],
        )
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def broker(self, zk_connect: str, port: int, log_dir: Path, broker_id: int = 0,
               overrides: Mapping[str, str] | None = None) -> KafkaBrokerProcess:
        return KafkaBrokerProcess(zk_connect, port, log_dir, broker_id, overrides, kafka=self)


def _kill_group(proc: subprocess.Popen, grace: float = 0.0) -> None:
    """SIGTERM (when grace > 0) then SIGKILL the process (and its session) by PID."""
    if proc.poll() is not None:
        return
    if grace > 0:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
            return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)


class KafkaBrokerProcess(ManagedProcess):
    """One Apache Kafka broker in ZooKeeper mode (``kafka.Kafka server.properties``).

    ``start()`` writes ``server.properties`` and a log4j config (WARN, plus broker lifecycle
    lines, to ``server.log`` in :attr:`work_dir`) and waits until the broker answers
    ApiVersions and lists itself in Metadata. ``stop()`` is SIGTERM (controlled shutdown)
    then SIGKILL after the deadline, by PID.
    """

    def __init__(self, zk_connect: str, port: int, log_dir: Path, broker_id: int = 0,
                 overrides: Mapping[str, str] | None = None,
                 kafka: ApacheKafka | None = None) -> None:
        self.kafka = kafka or ApacheKafka()
        self.zk_connect = zk_connect
        self.port = port
        self.host = "127.0.0.1"
        self.log_dir = Path(log_dir)
        self.broker_id = broker_id
        self.work_dir = self.log_dir.parent / f"{self.log_dir.name}-apache-kafka-run"
        self.properties: dict[str, str] = {
            "broker.id": str(broker_id),
            "zookeeper.connect": zk_connect,
            "zookeeper.connection.timeout.ms": "30000",
            "listeners": f"PLAINTEXT://{self.host}:{port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{port}",
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            "delete.topic.enable": "true",
        }
        self.properties.update(overrides or {})
        log4j = self.work_dir / "log4j.properties"
        argv = [
            "java", BROKER_HEAP, "-Xms1G", *JVM_PERFORMANCE_OPTS,
            f"-Dlog4j.configuration=file:{log4j}", f"-Dkafka.logs.dir={self.work_dir}",
            "-cp", f"{self.kafka.libs_dir}/*", "kafka.Kafka",
            str(self.work_dir / "server.properties"),
        ]
        super().__init__(f"apache-kafka-{broker_id}", argv, self.work_dir / "stdout.log")

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def server_log(self) -> Path:
        return self.work_dir / "server.log"

    def start(self, timeout: float = 90.0) -> None:
        self.kafka.require()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        (self.work_dir / "server.properties").write_text(
            "".join(f"{k}={v}\n" for k, v in self.properties.items()))
        (self.work_dir / "log4j.properties").write_text(
            BROKER_LOG4J.format(log_file=self.server_log))
        super().start()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def wait_ready(self, timeout: float = 90.0) -> None:
        def ready() -> bool:
            if not self.running:
                raise WaitTimeout(f"{self.name} exited early:\n{self.log_tail()}")
            return broker_serving(self.host, self.port)

        wait_until(ready, timeout, f"Apache Kafka broker {self.broker_id} serving on "
                   f"{self.bootstrap} (see {self.server_log})", interval=0.2)

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.server_log.read_text(errors="replace")
        except OSError:
            text = ""
        return "\n".join([*text.splitlines()[-lines:], super().log_tail(lines)])

    def __enter__(self) -> KafkaBrokerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def apache_kafka_cluster(scratch: Path, version: str = KAFKA_VERSION,
                         overrides: Mapping[str, str] | None = None,
                         zk_connect: str | None = None,
                         ) -> Iterator[KafkaBrokerProcess]:
    """One Apache Kafka broker in ``scratch`` (plus its own ZooKeeper unless ``zk_connect``
    is given), everything stopped by PID on exit."""
    kafka = ApacheKafka(version)
    kafka.require()
    zookeeper = None
    if zk_connect is None:
        zookeeper = ZooKeeperProcess(free_port(), scratch / "zookeeper")
        zookeeper.start()
    try:
        if zookeeper is not None:
            zookeeper.wait_ready(60)
            zk_connect = zookeeper.connect + "/apache-kafka"
        assert zk_connect is not None
        with kafka.broker(zk_connect, free_port(), scratch / "kafka-logs",
                          overrides=overrides) as broker:
            yield broker
    finally:
        if zookeeper is not None:
            zookeeper.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """``python tests/harness/apache_kafka.py [version]``: fetch the jars, print the path."""
    argv = list(sys.argv[1:] if argv is None else argv)
    kafka = ApacheKafka(argv[0] if argv else KAFKA_VERSION)
    libs = kafka.fetch_jars()
    if libs is None:
        print(f"Apache Kafka unavailable: {kafka.unavailable_reason}", file=sys.stderr)
        return 1
    print(libs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
