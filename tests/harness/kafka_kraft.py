"""Apache Kafka 4.x as a single KRaft node (broker and controller in one process).

Kafka 4 has no ZooKeeper mode, and it is the reference for what odradek goes past Kafka 3.9
in: the KIP-848 consumer group protocol. The node's storage is formatted with Kafka's own
``StorageTool --standalone``, then ``kafka.Kafka`` runs it; jars as for the ZooKeeper-mode
broker (:class:`tests.harness.apache_kafka.ApacheKafka`, from Maven Central). Logs at WARN
go to ``server.log`` in the work directory. Stopped by PID (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from collections.abc import Mapping
from pathlib import Path

from odradek.local_cluster import ManagedProcess, WaitTimeout, wait_until
from tests.harness.apache_kafka import ApacheKafka, broker_serving

__all__ = ["FAST_CONSUMER_GROUPS", "KAFKA_4", "KRaftKafkaProcess"]

KAFKA_4 = "4.4.0"
# KIP-848 groups that notice joins, leaves and deaths in a test's time. Kafka's floors
# (group.consumer.min.*) sit above these, so they are lowered too.
FAST_CONSUMER_GROUPS = {
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": "300",
    "group.consumer.min.session.timeout.ms": "3000",
    "group.consumer.session.timeout.ms": "6000",
    "auto.create.topics.enable": "false",
}

LOG4J2 = """Configuration:
  Appenders:
    File:
      name: File
      fileName: {log_file}
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: File
"""


class KRaftKafkaProcess(ManagedProcess):
    def __init__(self, kafka: ApacheKafka, port: int, controller_port: int, work_dir: Path,
                 overrides: Mapping[str, str] | None = None) -> None:
        self.kafka = kafka
        self.host = "127.0.0.1"
        self.port = port
        self.work_dir = Path(work_dir)
        self.properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"{self.host}:{controller_port}",
            "listeners": f"PLAINTEXT://{self.host}:{port},CONTROLLER://{self.host}:"
                         f"{controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.work_dir / "data"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **(overrides or {}),
        }
        config = self.work_dir / "server.properties"
        argv = kafka.java_command("kafka.Kafka", [str(config)], [
            "-Xmx512M", "-XX:+UseSerialGC",
            f"-Dlog4j2.configurationFile={self.work_dir / 'log4j2.yaml'}"])
        super().__init__("apache-kafka-kraft", argv, self.work_dir / "stdout.log")

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def server_log(self) -> Path:
        return self.work_dir / "server.log"

    def start(self, timeout: float = 120.0) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config = self.work_dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()))
        (self.work_dir / "log4j2.yaml").write_text(LOG4J2.format(log_file=self.server_log))
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        formatted = subprocess.run(
            self.kafka.java_command("kafka.tools.StorageTool", [
                "format", "-t", cluster_id, "-c", str(config), "--standalone"],
                ["-Xmx256M", "-XX:+UseSerialGC"]),
            capture_output=True, text=True, timeout=120, check=False)
        if formatted.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed:\n{formatted.stderr[-2000:]}")
        super().start()

        def ready() -> bool:
            if not self.running:
                raise WaitTimeout(f"{self.name} exited early:\n{self.log_tail()}")
            return broker_serving(self.host, self.port)

        try:
            wait_until(ready, timeout, f"Apache Kafka {self.kafka.version} (KRaft) serving on "
                       f"{self.bootstrap}", interval=0.2)
        except BaseException:
            self.stop()
            raise

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.server_log.read_text(errors="replace")
        except OSError:
            text = ""
        return "\n".join([*text.splitlines()[-lines:], super().log_tail(lines)])
