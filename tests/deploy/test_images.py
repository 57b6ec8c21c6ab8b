"""The container images' sources: Dockerfiles clean under hadolint, shell scripts clean under
shellcheck, and the entrypoints derive what the StatefulSets rely on (broker.id and advertised
listener; ZooKeeper's myid and ensemble) — the e2e suite runs the same images on a cluster.

The entrypoints are run for real with a stand-in for the program they exec (``odradek``,
``java``) that prints its arguments, so the test sees exactly the command line a pod would run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILES = [REPO / "broker-image" / "Dockerfile", REPO / "zookeeper-image" / "Dockerfile",
               REPO / "operator" / "Dockerfile"]
SCRIPTS = sorted([*REPO.glob("e2e/local/*.sh"), *REPO.glob("e2e/kind/*.sh"),
                  REPO / "broker-image" / "entrypoint.sh", *REPO.glob("zookeeper-image/*.sh")])


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not Path(found).exists():
        pytest.fail(f"{name} is missing: it comes with the dev extras (make install)")
    return found


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.parent.name)
def test_dockerfile_is_clean_under_hadolint(dockerfile: Path) -> None:
    result = subprocess.run([_tool("hadolint"), str(dockerfile)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_shell_scripts_are_clean_under_shellcheck() -> None:
    result = subprocess.run([_tool("shellcheck"), "-x", *map(str, SCRIPTS)], capture_output=True,
                            text=True, timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr


def _stand_in(tmp_path: Path, name: str) -> dict[str, str]:
    """A PATH whose ``name`` prints its arguments, one per line, and the generated config."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    program = bin_dir / name
    program.write_text('#!/bin/sh\nfor a in "$@"; do printf "ARG %s\\n" "$a"; done\n'
                       '[ -z "${SHOW_FILE:-}" ] || sed "s/^/CFG /" "$SHOW_FILE"\n')
    program.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_broker_entrypoint_derives_id_and_advertised_listener_from_the_pod(tmp_path: Path) -> None:
    env = _stand_in(tmp_path, "odradek") | {
        "HOSTNAME": "odradek-2", "POD_NAMESPACE": "prod", "ODRADEK_HEADLESS_SERVICE": "kafka-hl",
        "ODRADEK_OVERRIDES": "zookeeper.connect=zk:2181/odradek num.partitions=6",
        "ODRADEK_CONFIG": str(tmp_path / "absent.properties")}
    out = subprocess.run(["sh", str(REPO / "broker-image" / "entrypoint.sh")], env=env,
                         capture_output=True, text=True, timeout=30, check=True).stdout
    args = [line[4:] for line in out.splitlines()]
    assert args[0] == "broker"
    overrides = [args[i + 1] for i, a in enumerate(args) if a == "--override"]
    assert overrides == ["broker.id=2", "listeners=PLAINTEXT://0.0.0.0:9092",
                         "advertised.listeners=PLAINTEXT://odradek-2.kafka-hl.prod.svc.cluster.local:9092",
                         "log.dirs=/var/lib/odradek/data", "zookeeper.connect=zk:2181/odradek",
                         "num.partitions=6"]


def test_broker_entrypoint_wires_named_listeners_tls_and_the_inter_broker_user(
        tmp_path: Path) -> None:
    """What the operator's StatefulSet hands a secured broker: every listener advertised at the
    pod's name, the TLS Secret turned into one PEM key store, the SCRAM user into
    sasl.jaas.config, and client properties the readiness probe can read."""
    from odradek.client.security import settings_from_properties
    from odradek.config import parse_properties
    from odradek.config_security import parse_jaas

    tls, run = tmp_path / "tls", tmp_path / "run"
    tls.mkdir()
    (tls / "tls.crt").write_text("CERT\n")
    (tls / "tls.key").write_text("KEY\n")
    (tls / "ca.crt").write_text("CA\n")
    env = _stand_in(tmp_path, "odradek") | {
        "HOSTNAME": "odr-1", "POD_NAMESPACE": "prod", "ODRADEK_HEADLESS_SERVICE": "odr-headless",
        "ODRADEK_CONFIG": str(tmp_path / "absent.properties"),
        "ODRADEK_LISTENERS": "INTERNAL:9091 CLIENTS:9092",
        "ODRADEK_INTER_BROKER_PROTOCOL": "SASL_SSL", "ODRADEK_TLS_DIR": str(tls),
        "ODRADEK_RUN_DIR": str(run), "ODRADEK_PROBE_CONFIG": str(run / "probe.properties"),
        "ODRADEK_SASL_MECHANISM": "SCRAM-SHA-256", "ODRADEK_SASL_USERNAME": "admin",
        "ODRADEK_SASL_PASSWORD": 'pa"ss\\word'}
    out = subprocess.run(["sh", str(REPO / "broker-image" / "entrypoint.sh")], env=env,
                         capture_output=True, text=True, timeout=30, check=True).stdout
    args = [line[4:] for line in out.splitlines()]
    overrides = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--override")
    fqdn = "odr-1.odr-headless.prod.svc.cluster.local"
    assert overrides["listeners"] == "INTERNAL://0.0.0.0:9091,CLIENTS://0.0.0.0:9092"
    assert overrides["advertised.listeners"] == f"INTERNAL://{fqdn}:9091,CLIENTS://{fqdn}:9092"
    assert overrides["ssl.keystore.location"] == f"{run}/keystore.pem"
    assert (run / "keystore.pem").read_text() == "KEY\nCERT\n"
    assert (run / "keystore.pem").stat().st_mode & 0o077 == 0
    assert overrides["ssl.truststore.location"] == f"{tls}/ca.crt"
    assert parse_jaas(overrides["sasl.jaas.config"]) == ("admin", 'pa"ss\\word')
    probe = settings_from_properties(parse_properties(
        (run / "probe.properties").read_text()))
    assert probe["security_protocol"] == "SASL_SSL" and probe["ssl_cafile"] == f"{tls}/ca.crt"
    assert probe["sasl_mechanism"] == "SCRAM-SHA-256"
    assert probe["sasl_plain_username"] == "admin"
    assert probe["ssl_check_hostname"] is False  # the probe dials 127.0.0.1
    assert probe["ssl_certfile"] == f"{run}/keystore.pem"  # for clientAuth, as brokers do


def test_broker_entrypoint_advertises_outside_listeners_from_the_configmap(
        tmp_path: Path) -> None:
    """``broker-<id>.advertised`` beside server.properties names the broker's outside address
    per listener (the node's address substituted); other listeners stay at the pod's name."""
    (tmp_path / "broker-1.advertised").write_text(
        "EXTERNAL://${ODRADEK_NODE_ADDRESS}:31001\nLB://203.0.113.7:9095\n")
    env = _stand_in(tmp_path, "odradek") | {
        "HOSTNAME": "odr-1", "POD_NAMESPACE": "prod", "ODRADEK_HEADLESS_SERVICE": "odr-headless",
        "ODRADEK_CONFIG": str(tmp_path / "server.properties"),
        "ODRADEK_LISTENERS": "INTERNAL:9091 EXTERNAL:9094 LB:9095 OTHER:9096",
        "ODRADEK_NODE_ADDRESS": "10.200.0.2"}
    out = subprocess.run(["sh", str(REPO / "broker-image" / "entrypoint.sh")], env=env,
                         capture_output=True, text=True, timeout=30, check=True).stdout
    args = [line[4:] for line in out.splitlines()]
    overrides = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--override")
    fqdn = "odr-1.odr-headless.prod.svc.cluster.local"
    assert overrides["advertised.listeners"] == (
        f"INTERNAL://{fqdn}:9091,EXTERNAL://10.200.0.2:31001,LB://203.0.113.7:9095,"
        f"OTHER://{fqdn}:9096")
    del env["ODRADEK_NODE_ADDRESS"]
    result = subprocess.run(["sh", str(REPO / "broker-image" / "entrypoint.sh")], env=env,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode != 0 and "set ODRADEK_NODE_ADDRESS" in result.stderr


def test_broker_entrypoint_refuses_a_tls_secret_without_a_key(tmp_path: Path) -> None:
    tls = tmp_path / "tls"
    tls.mkdir()
    (tls / "tls.crt").write_text("CERT\n")
    env = _stand_in(tmp_path, "odradek") | {"HOSTNAME": "odr-0", "ODRADEK_TLS_DIR": str(tls),
                                            "ODRADEK_RUN_DIR": str(tmp_path / "run")}
    result = subprocess.run(["sh", str(REPO / "broker-image" / "entrypoint.sh")], env=env,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1 and "no tls.key" in result.stderr


def test_broker_entrypoint_refuses_a_pod_name_without_an_ordinal(tmp_path: Path) -> None:
    env = _stand_in(tmp_path, "odradek") | {"HOSTNAME": "broker"}
    result = subprocess.run(["sh", str(REPO / "broker-image" / "entrypoint.sh")], env=env,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert "set BROKER_ID" in result.stderr


def test_zookeeper_entrypoint_writes_myid_and_the_ensemble(tmp_path: Path) -> None:
    conf = tmp_path / "zoo.cfg"
    env = _stand_in(tmp_path, "java") | {
        "HOSTNAME": "zk-1", "POD_NAMESPACE": "prod", "ZK_REPLICAS": "3",
        "ZOO_DATA_DIR": str(tmp_path / "data"), "ZOO_CONF_FILE": str(conf),
        "SHOW_FILE": str(conf), "ZOO_CFG_EXTRA": "snapCount=1000"}
    out = subprocess.run(["sh", str(REPO / "zookeeper-image" / "entrypoint.sh")], env=env,
                         capture_output=True, text=True, timeout=30, check=True).stdout
    assert (tmp_path / "data" / "myid").read_text().strip() == "2"
    config = [line[4:] for line in out.splitlines() if line.startswith("CFG ")]
    for i in range(3):
        assert (f"server.{i + 1}=zk-{i}.zk-headless.prod.svc.cluster.local:2888:3888;2181"
                in config)
    assert "snapCount=1000" in config
    assert f"ARG {conf}" in out.splitlines()
    assert "ARG org.apache.zookeeper.server.quorum.QuorumPeerMain" in out.splitlines()


def test_zookeeper_entrypoint_takes_an_explicit_ensemble_in_the_official_image_form(
        tmp_path: Path) -> None:
    conf = tmp_path / "zoo.cfg"
    servers = "server.1=a:2888:3888;2181 server.2=b:2888:3888;2181 server.3=c:2888:3888;2181"
    env = _stand_in(tmp_path, "java") | {
        "HOSTNAME": "zookeeper-0", "ZOO_SERVERS": servers, "ZOO_DATA_DIR": str(tmp_path / "d"),
        "ZOO_CONF_FILE": str(conf), "SHOW_FILE": str(conf)}
    out = subprocess.run(["sh", str(REPO / "zookeeper-image" / "entrypoint.sh")], env=env,
                         capture_output=True, text=True, timeout=30, check=True).stdout
    config = [line[4:] for line in out.splitlines() if line.startswith("CFG ")]
    assert [c for c in config if c.startswith("server.")] == servers.split()
    assert f"dataDir={tmp_path / 'd'}" in config
    assert (tmp_path / "d" / "myid").read_text().strip() == "1"


def test_zookeeper_readiness_passes_on_a_serving_server_and_fails_on_none(zookeeper) -> None:
    script = str(REPO / "zookeeper-image" / "ready.sh")
    env = {**os.environ, "ZOO_CLIENT_PORT": str(zookeeper.port)}
    ok = subprocess.run(["bash", script], env=env, capture_output=True, text=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    from odradek.local_cluster import free_port

    down = subprocess.run(["bash", script], env={**os.environ, "ZOO_CLIENT_PORT": str(free_port())},
                          capture_output=True, text=True, timeout=30)
    assert down.returncode != 0
