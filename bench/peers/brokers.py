"""RabbitMQ and ActiveMQ from Debian's packages, run by the bench as loopback processes.

``bench/peers/install.sh`` installs the packages when missing (their own services never
start). Each broker here gets its own data directory, free ports on 127.0.0.1 and a config
written by this module; it is started as a child process in its own session and stopped by
PID (SIGTERM to that session, SIGKILL after a deadline).

Configuration follows the Kafka paper's comparison (persistent messages on the broker's
default durable store) with nothing tuned beyond what the loopback setup needs:

* RabbitMQ 3.10: ``rabbitmq-server`` with its own epmd (started first, on a free port, so no
  shared daemon outlives the run), a durable queue; messages are published persistent
  (delivery_mode 2), written to its message store.
* ActiveMQ 5.17: the broker jar with a KahaDB persistence adapter (ActiveMQ's default
  store, which syncs to disk on every persistent send it is asked to confirm), a STOMP
  connector (the Python client) and an OpenWire one (ActiveMQ's own Java client); JMX off.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from odradek.local_cluster import ManagedProcess, free_port, port_open, wait_until

INSTALL_SCRIPT = Path(__file__).with_name("install.sh")
RABBITMQ_SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
ACTIVEMQ_HOME = Path("/usr/share/activemq")
START_TIMEOUT = 120.0


class PeerUnavailable(RuntimeError):
    pass


class PeerBroker(NamedTuple):
    """A running peer: its process and the loopback ports its clients connect to."""

    process: ManagedProcess
    port: int  # AMQP (RabbitMQ) or STOMP (ActiveMQ)
    openwire_port: int | None = None  # ActiveMQ's native protocol


def ensure_installed() -> None:
    """Run the install script (a no-op when both packages are there)."""
    if Path(RABBITMQ_SERVER).exists() and (ACTIVEMQ_HOME / "bin" / "activemq.jar").exists():
        return
    proc = subprocess.run(["sh", str(INSTALL_SCRIPT)], capture_output=True, text=True,
                          timeout=900, check=False)
    if proc.returncode != 0:
        raise PeerUnavailable(f"{INSTALL_SCRIPT} failed: {proc.stderr.strip()[-300:]}")


class SessionProcess(ManagedProcess):
    """A ManagedProcess whose stop signals its whole session (the wrapper script and the
    VM it starts), by the session leader's PID."""

    def stop(self, timeout: float = 30) -> int | None:
        if self.process is None:
            return None
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # whatever is left of the session
        return self._reap(10)


@contextlib.contextmanager
def rabbitmq(scratch: Path) -> Iterator[PeerBroker]:
    """A RabbitMQ node on 127.0.0.1 (``port``: AMQP)."""
    ensure_installed()
    scratch.mkdir(parents=True, exist_ok=True)
    (scratch / "home").mkdir(exist_ok=True)
    epmd_port, amqp_port, dist_port = free_port(), free_port(), free_port()
    (scratch / "rabbitmq.conf").write_text(
        f"listeners.tcp.default = 127.0.0.1:{amqp_port}\n"
        "loopback_users = none\n"
        "disk_free_limit.absolute = 1GB\n")
    (scratch / "enabled_plugins").write_text("[].\n")
    epmd = SessionProcess("epmd", ["epmd", "-port", str(epmd_port), "-address", "127.0.0.1"],
                          scratch / "epmd.log")
    env = dict(
        os.environ, HOME=str(scratch / "home"), ERL_EPMD_PORT=str(epmd_port),
        RABBITMQ_NODENAME=f"bench{amqp_port}@localhost",
        RABBITMQ_NODE_IP_ADDRESS="127.0.0.1", RABBITMQ_NODE_PORT=str(amqp_port),
        RABBITMQ_DIST_PORT=str(dist_port), RABBITMQ_MNESIA_BASE=str(scratch / "mnesia"),
        RABBITMQ_LOG_BASE=str(scratch / "log"),
        RABBITMQ_CONFIG_FILE=str(scratch / "rabbitmq.conf"),
        RABBITMQ_ENABLED_PLUGINS_FILE=str(scratch / "enabled_plugins"),
        RABBITMQ_PID_FILE=str(scratch / "rabbitmq.pid"),
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}",
    )
    server = SessionProcess("rabbitmq", [RABBITMQ_SERVER], scratch / "rabbitmq.out", env)
    try:
        epmd.start()
        wait_until(lambda: port_open("127.0.0.1", epmd_port), 30, "epmd listening")
        server.start()
        wait_until(lambda: _alive(server) and _amqp_ready(amqp_port), START_TIMEOUT,
                   f"RabbitMQ on 127.0.0.1:{amqp_port}", interval=0.5)
        yield PeerBroker(server, amqp_port)
    finally:
        server.stop()
        epmd.stop()


def _alive(process: ManagedProcess) -> bool:
    if not process.running:
        raise PeerUnavailable(f"{process.name} exited:\n{process.log_tail(20)}")
    return True


def _amqp_ready(port: int) -> bool:
    import pika

    try:
        pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", port, socket_timeout=2, connection_attempts=1)).close()
        return True
    except Exception:
        return False


ACTIVEMQ_XML = """\
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans
         http://www.springframework.org/schema/beans/spring-beans-2.0.xsd
         http://activemq.apache.org/schema/core
         http://activemq.apache.org/schema/core/activemq-core.xsd">
  <broker xmlns="http://activemq.apache.org/schema/core" useJmx="false"
          brokerName="bench" persistent="true" dataDirectory="{data}">
    <persistenceAdapter>
      <kahaDB directory="{data}/kahadb"/>
    </persistenceAdapter>
    <systemUsage>
      <systemUsage>
        <memoryUsage><memoryUsage limit="256 mb"/></memoryUsage>
        <storeUsage><storeUsage limit="8 gb"/></storeUsage>
        <tempUsage><tempUsage limit="1 gb"/></tempUsage>
      </systemUsage>
    </systemUsage>
    <transportConnectors>
      <transportConnector name="stomp" uri="stomp://127.0.0.1:{port}"/>
      <transportConnector name="openwire" uri="tcp://127.0.0.1:{openwire_port}"/>
    </transportConnectors>
  </broker>
</beans>
"""

ACTIVEMQ_LOG4J2 = """\
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d %p %m (%c)%n
"""

# What /usr/bin/activemq passes to a Java > 8 VM.
_ACTIVEMQ_JVM = (
    "--add-reads=java.xml=java.logging",
    "--add-opens", "java.base/java.security=ALL-UNNAMED",
    "--add-opens", "java.base/java.net=ALL-UNNAMED",
    "--add-opens", "java.base/java.lang=ALL-UNNAMED",
    "--add-opens", "java.base/java.util=ALL-UNNAMED",
    "--add-opens", "java.naming/javax.naming.spi=ALL-UNNAMED",
    "--add-opens", "java.rmi/sun.rmi.transport.tcp=ALL-UNNAMED",
    "--add-opens", "java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens", "java.base/java.util.concurrent.atomic=ALL-UNNAMED",
)


@contextlib.contextmanager
def activemq(scratch: Path) -> Iterator[PeerBroker]:
    """An ActiveMQ broker on 127.0.0.1 (``port``: STOMP; ``openwire_port``: OpenWire)."""
    ensure_installed()
    java = shutil.which("java")
    if java is None:
        raise PeerUnavailable("java is not installed")
    conf, data = scratch / "conf", scratch / "data"
    conf.mkdir(parents=True, exist_ok=True)
    data.mkdir(parents=True, exist_ok=True)
    port, openwire_port = free_port(), free_port()
    (conf / "activemq.xml").write_text(
        ACTIVEMQ_XML.format(data=data, port=port, openwire_port=openwire_port))
    (conf / "log4j2.properties").write_text(ACTIVEMQ_LOG4J2.format(log=scratch / "activemq.log"))
    argv = [
        java, "-Xms512M", "-Xmx512M", "-Dorg.apache.activemq.UseDedicatedTaskRunner=true",
        *_ACTIVEMQ_JVM,
        f"-Dlog4j.configurationFile={conf / 'log4j2.properties'}",
        f"-Dactivemq.classpath={conf}:{ACTIVEMQ_HOME / 'lib'}/",
        f"-Dactivemq.home={ACTIVEMQ_HOME}", f"-Dactivemq.base={scratch}",
        f"-Dactivemq.conf={conf}", f"-Dactivemq.data={data}",
        "-jar", str(ACTIVEMQ_HOME / "bin" / "activemq.jar"),
        "start", f"xbean:file:{conf / 'activemq.xml'}",
    ]
    server = SessionProcess("activemq", argv, scratch / "activemq.out")
    try:
        server.start()
        wait_until(lambda: _alive(server) and port_open("127.0.0.1", port), START_TIMEOUT,
                   f"ActiveMQ STOMP on 127.0.0.1:{port}", interval=0.5)
        wait_until(lambda: port_open("127.0.0.1", openwire_port), START_TIMEOUT,
                   f"ActiveMQ OpenWire on 127.0.0.1:{openwire_port}", interval=0.2)
        yield PeerBroker(server, port, openwire_port)
    finally:
        server.stop()
