"""The Helm chart (charts/odradek), offline: ``helm lint --strict``, and what ``helm template``
renders for the default and the full values (ci/full-values.yaml) validated against the
Kubernetes v1.34 schemas (kubernetes-validate, strict: an unknown field fails) and, for
odradek's own kinds, against the CRDs. Plus the contracts between the chart and the rest of the
repository: CRDs identical to crds/, RBAC identical to operator/deploy/rbac.yaml, selectors that
match the pods the operator makes.

Helm is the one binary these tests need: from PATH, else the local stack's cache
(``make helm`` builds it there). Without it, they skip with one line saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from odradek_operator.manifests.common import ClusterNames
from odradek_operator.spec import BrokerClusterSpec

from tests.operator.crd_schema import CRDS, REPO
from tests.operator.crd_schema import errors as crd_errors
from tests.operator.test_storage_migration import MIGRATION_PERMISSIONS
from tests.operator.test_uninstall import HOOK_PERMISSIONS

CHART = REPO / "charts" / "odradek"
FULL_VALUES = CHART / "ci" / "full-values.yaml"
KUBE_VERSION = "1.34.0"
MONITORING_APIS = ["monitoring.coreos.com/v1/PodMonitor", "monitoring.coreos.com/v1/PrometheusRule"]
CACHE = Path(os.environ.get("ODRADEK_K8S_CACHE", "/var/cache/odradek-k8s"))


def _helm() -> str | None:
    found = shutil.which("helm")
    if found:
        return found
    cached = CACHE / "bin" / "helm"
    return str(cached) if cached.is_file() and os.access(cached, os.X_OK) else None


HELM = _helm()
needs_helm = pytest.mark.skipif(
    HELM is None, reason=f"helm not found on PATH or in {CACHE}/bin: `make helm` builds it")


def helm(*args: str) -> str:
    assert HELM is not None
    result = subprocess.run([HELM, *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def render(*values: str, monitoring: bool = False, set_: tuple[str, ...] = ()
           ) -> list[dict[str, Any]]:
    args = ["template", "rel", str(CHART), "--namespace", "streaming",
            "--kube-version", KUBE_VERSION, "--include-crds"]
    for path in values:
        args += ["-f", path]
    for api in MONITORING_APIS if monitoring else ():
        args += ["--api-versions", api]
    for item in set_:
        args += ["--set", item]
    return [doc for doc in yaml.safe_load_all(helm(*args)) if doc]


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


# ---------------------------------------------------------------- no helm needed


def test_chart_crds_are_identical_to_the_repository_crds():
    ours = {p.name: p.read_bytes() for p in (REPO / "crds").glob("*.yaml")}
    chart = {p.name: p.read_bytes() for p in (CHART / "crds").glob("*.yaml")}
    assert chart.keys() == ours.keys()
    differ = sorted(name for name in ours if ours[name] != chart[name])
    assert not differ, f"charts/odradek/crds differ from crds/: {differ} (copy crds/*.yaml)"


def test_the_chart_version_moves_past_the_release_it_upgrades_from():
    """e2e/test_upgrade.py installs the previous release from git and upgrades it to this
    chart: that release exists, and this chart's version (SemVer, as Helm requires) is newer."""
    from e2e.helm import chart_version, previous_release

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("no git checkout")
    commit, previous = previous_release()

    def semver(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split("-")[0].split("."))

    current = chart_version((CHART / "Chart.yaml").read_text())
    assert semver(current) > semver(previous), f"chart {current} after {previous} ({commit})"


def test_values_schema_accepts_the_default_and_full_values():
    import jsonschema

    schema = json.loads((CHART / "values.schema.json").read_text())
    for path in (CHART / "values.yaml", FULL_VALUES):
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"cluster": {"replicas": 0}}, schema)


# ---------------------------------------------------------------- helm


@needs_helm
@pytest.mark.parametrize("values", [[], [str(FULL_VALUES)]], ids=["default", "full"])
def test_helm_lint_is_clean(values):
    args = ["lint", str(CHART), "--strict", "--kube-version", KUBE_VERSION]
    for path in values:
        args += ["-f", path]
    out = helm(*args)
    assert "0 chart(s) failed" in out


@needs_helm
def test_helm_template_needs_no_kube_version():
    """Helm's own default Kubernetes version meets the chart's kubeVersion: v1.37 for Helm
    v3.22's release builds and e2e/local/build.sh's; a plain `go install` says v1.20."""
    assert HELM is not None
    result = subprocess.run([HELM, "template", "rel", str(CHART)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, (
        f"`helm template` without --kube-version failed ({HELM}; rebuild it with "
        f"e2e/local/build.sh helm if it says v1.20.0):\n{result.stderr}")


@needs_helm
def test_schema_rejects_unknown_and_wrong_values():
    for bad in ("cluster.replicas=0", "operator.logFormat=xml", "typo=1",
                "cluster.zookeeper.managed.replicas=2"):
        result = subprocess.run([HELM or "helm", "lint", str(CHART), "--set", bad],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode != 0, f"--set {bad} was accepted"


def _validate(docs: list[dict[str, Any]]) -> list[str]:
    problems = []
    for doc in docs:
        what = f"{doc['kind']}/{doc['metadata']['name']}"
        api_group = doc["apiVersion"].split("/")[0]
        if api_group == "odradek.dev":
            problems += [f"{what}: {e}" for e in crd_errors(doc["kind"], doc)]
        elif api_group == "monitoring.coreos.com":
            continue  # checked by test_monitoring_objects (no schema ships offline)
        else:
            try:
                kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
            except kubernetes_validate.ValidationError as exc:
                problems.append(f"{what}: {exc.message} at {list(exc.path)}")
    return problems


@needs_helm
@pytest.mark.parametrize("values", [[], [str(FULL_VALUES)]], ids=["default", "full"])
def test_rendered_objects_are_valid_kubernetes_v1_34(values):
    docs = render(*values, monitoring=True)
    assert _validate(docs) == []
    kinds = {d["kind"] for d in docs}
    assert {"CustomResourceDefinition", "Deployment", "ServiceAccount", "ClusterRole",
            "ClusterRoleBinding", "ConfigMap", "NetworkPolicy", "PodMonitor",
            "PrometheusRule", "Job"} <= kinds
    if values:
        assert {"BrokerCluster", "Topic"} <= kinds


@needs_helm
def test_default_values_install_only_the_operator_and_monitoring():
    docs = render()
    assert not by_kind(docs, "BrokerCluster") and not by_kind(docs, "Topic")
    assert not by_kind(docs, "PodMonitor") and not by_kind(docs, "PrometheusRule"), \
        "monitoring.coreos.com objects must need their CRDs"
    (deployment,) = by_kind(docs, "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"] == {"type": "Recreate"}
    (container,) = spec["template"]["spec"]["containers"]
    assert container["image"] == "odradek/operator:0.2.0"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"health": 8080, "metrics": 9090}
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["ODRADEK_OPERATOR_METRICS_PORT"] == "9090"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True


@needs_helm
def test_full_values_render_the_cluster_topics_and_images():
    docs = render(str(FULL_VALUES), monitoring=True)
    (cluster,) = by_kind(docs, "BrokerCluster")
    spec = cluster["spec"]
    assert cluster["metadata"]["name"] == "events"
    assert spec["image"] == "registry.example/odradek/broker:1.2.3"
    assert spec["storage"] == {"size": "100Gi", "storageClassName": "fast-ssd",
                               "deleteClaim": True}
    # Large YAML numbers stay integers (not 6.048e+08), fractions stay fractions.
    assert spec["config"]["log.retention.ms"] == "604800000"
    assert spec["config"]["log.segment.bytes"] == "1073741824"
    assert spec["config"]["log.cleaner.min.cleanable.ratio"] == "0.5"
    managed = spec["zookeeper"]["managed"]
    assert managed["image"] == "registry.example/odradek/zookeeper:1.2.3"
    assert managed["storage"]["storageClassName"] == "zk-ssd"
    # The operator reads the rendered spec the same way it reads a hand-written one.
    parsed = BrokerClusterSpec.parse(spec)
    assert parsed.replicas == 5 and parsed.delete_claim and parsed.rack_topology_key
    topics = {t["metadata"]["name"]: t["spec"] for t in by_kind(docs, "Topic")}
    assert topics["page-views"]["clusterRef"] == {"name": "events"}
    assert topics["page-views"]["config"]["retention.ms"] == "604800000"
    assert topics["metrics-raw"]["topicName"] == "metrics.raw"
    assert topics["metrics-raw"]["deletionPolicy"] == "Delete"


@needs_helm
def test_external_zookeeper_renders_no_managed_ensemble_and_no_zookeeper_policy():
    docs = render(set_=("cluster.enabled=true", "cluster.zookeeper.connect=zk-0:2181/odr"))
    (cluster,) = by_kind(docs, "BrokerCluster")
    assert cluster["spec"]["zookeeper"] == {"connect": "zk-0:2181/odr"}
    assert crd_errors("BrokerCluster", cluster) == []
    names = {p["metadata"]["name"] for p in by_kind(docs, "NetworkPolicy")}
    assert not any(n.endswith("-zookeeper") for n in names)


@needs_helm
def test_crds_in_the_rendered_chart_are_the_repository_crds():
    rendered = {d["metadata"]["name"]: d for d in by_kind(render(), "CustomResourceDefinition")}
    assert {name: crd for name, crd in rendered.items()} == \
        {crd["metadata"]["name"]: crd for crd in CRDS.values()}


@needs_helm
def test_operator_rbac_is_the_documented_least_privilege_set():
    (role,) = [r for r in by_kind(render(), "ClusterRole")
               if "helm.sh/hook" not in (r["metadata"].get("annotations") or {})]
    plain = [d for d in yaml.safe_load_all((REPO / "operator/deploy/rbac.yaml").read_text())
             if d and d["kind"] == "ClusterRole"]
    assert role["rules"] == plain[0]["rules"], \
        "operator/deploy/rbac.yaml and the chart's ClusterRole must grant the same rules"
    verbs = {(g, r): set(rule["verbs"]) for rule in role["rules"]
             for g in rule["apiGroups"] for r in rule["resources"]}
    assert "*" not in {v for vs in verbs.values() for v in vs}
    assert verbs[("", "pods")] == {"list", "delete"}
    # By name, never listed or watched; a User's generated password is written once.
    assert verbs[("", "secrets")] == {"get", "create", "patch"}


@needs_helm
def test_network_policies_select_the_pods_the_operator_makes():
    docs = render(str(FULL_VALUES))
    policies = {p["metadata"]["name"]: p["spec"] for p in by_kind(docs, "NetworkPolicy")}
    names = ClusterNames("events", "streaming")
    assert policies["events-brokers"]["podSelector"]["matchLabels"] == names.selector("broker")
    assert policies["events-zookeeper"]["podSelector"]["matchLabels"] == \
        names.selector("zookeeper")
    (deployment,) = by_kind(docs, "Deployment")
    operator_labels = deployment["spec"]["template"]["metadata"]["labels"]
    selector = policies["rel-odradek-operator"]["podSelector"]["matchLabels"]
    assert selector.items() <= operator_labels.items()
    # ZooKeeper admits only this cluster's brokers and its peers.
    (rule,) = policies["events-zookeeper"]["ingress"]
    (peer,) = rule["from"]
    expressions = {e["key"]: e["values"] for e in peer["podSelector"]["matchExpressions"]}
    assert expressions["app.kubernetes.io/instance"] == ["events"]
    assert sorted(expressions["app.kubernetes.io/component"]) == ["broker", "zookeeper"]


@needs_helm
def test_monitoring_objects():
    docs = render(str(FULL_VALUES), monitoring=True)
    (monitor,) = by_kind(docs, "PodMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["podMetricsEndpoints"] == [
        {"port": "metrics", "path": "/metrics", "interval": "15s", "honorLabels": True}]
    (rule,) = by_kind(docs, "PrometheusRule")
    shipped = yaml.safe_load((CHART / "rules" / "odradek.rules.yaml").read_text())
    assert rule["spec"] == shipped and rule["spec"]["groups"]
    dashboards = by_kind(docs, "ConfigMap")
    files = sorted(p.name for p in (CHART / "dashboards").glob("*.json"))
    assert sorted(k for cm in dashboards for k in cm["data"]) == files
    for cm in dashboards:
        assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert cm["metadata"]["namespace"] == "monitoring"
        assert cm["metadata"]["annotations"] == {"grafana_folder": "odradek"}
        for name, text in cm["data"].items():
            assert json.loads(text) == json.loads((CHART / "dashboards" / name).read_text())


@needs_helm
def test_runbook_links_point_where_the_user_hosts_the_runbooks():
    from odradek_monitoring.alerts import RUNBOOK_BASE

    docs = render(monitoring=True, set_=(
        "monitoring.prometheusRule.runbookBaseUrl=https://wiki.example.com/odradek/",))
    (rule,) = by_kind(docs, "PrometheusRule")
    urls = [r["annotations"]["runbook_url"] for g in rule["spec"]["groups"]
            for r in g["rules"] if "alert" in r]
    assert urls and all(u.startswith("https://wiki.example.com/odradek/Odradek") for u in urls)
    assert RUNBOOK_BASE in (CHART / "templates" / "prometheusrule.yaml").read_text(), \
        "the template replaces a runbook base the generated rules no longer use"


def _grants(role: dict[str, Any], scope: str) -> set[tuple[str, str, str, str]]:
    return {(scope, group, resource, verb) for rule in role["rules"]
            for group in rule["apiGroups"] for resource in rule["resources"]
            for verb in rule["verbs"]}


@needs_helm
def test_cluster_scoped_names_stay_distinct_in_a_long_namespace():
    """Found by e2e-local: in a namespace of 50 characters, truncating
    "<operator>-<namespace>-uninstall" to 63 gave the hook's ClusterRole the operator's own
    name, so the hook replaced the operator's rights and the BrokerCluster's finalizer never
    ran. Every cluster-scoped object needs its own name of at most 63 characters."""
    namespace = "e2e-test-kubectl-applied-topics-and-groups-d-7a68"
    docs = [doc for doc in yaml.safe_load_all(helm(
        "template", "odradek", str(CHART), "--namespace", namespace,
        "--kube-version", KUBE_VERSION)) if doc]
    scoped = [(d["kind"], d["metadata"]["name"]) for d in docs
              if d["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    assert len(scoped) >= 4
    assert len(set(scoped)) == len(scoped), f"cluster-scoped names collide: {scoped}"
    assert all(len(name) <= 63 for _kind, name in scoped), scoped


@needs_helm
def test_uninstall_hook_runs_before_delete_with_exactly_the_rights_it_uses():
    docs = render()
    hooks = [d for d in docs
             if (d["metadata"].get("annotations") or {}).get("helm.sh/hook") == "pre-delete"]
    assert {d["kind"] for d in hooks} == {"ServiceAccount", "Role", "RoleBinding", "ClusterRole",
                                          "ClusterRoleBinding", "Job"}
    (role,) = by_kind(hooks, "Role")
    (cluster_role,) = by_kind(hooks, "ClusterRole")
    # What the hook does against kmock stays within these (tests/operator/test_uninstall.py).
    assert _grants(role, "namespace") | _grants(cluster_role, "cluster") == HOOK_PERMISSIONS
    (deployment,) = by_kind(docs, "Deployment")
    operator = deployment["metadata"]["name"]
    (deployments_rule,) = [r for r in role["rules"] if r["resources"] == ["deployments"]]
    assert deployments_rule["resourceNames"] == [operator], "only the operator is stopped"
    for binding_kind, role_kind in (("RoleBinding", role), ("ClusterRoleBinding", cluster_role)):
        (binding,) = by_kind(hooks, binding_kind)
        assert binding["roleRef"]["name"] == role_kind["metadata"]["name"]
    (job,) = by_kind(hooks, "Job")
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[:3] == ["python3", "-m", "odradek_operator.uninstall"]
    assert "--selector=app.kubernetes.io/instance=rel,app.kubernetes.io/managed-by=Helm" \
        in command
    assert f"--operator-deployment={operator}" in command


@needs_helm
def test_storage_migration_hook_runs_after_upgrade_only_with_the_rights_it_uses():
    docs = render()
    hooks = [d for d in docs if (d["metadata"].get("annotations") or {}).get("helm.sh/hook")
             == "post-upgrade"]
    assert {d["kind"] for d in hooks} == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding",
                                          "Job"}
    (role,) = by_kind(hooks, "ClusterRole")
    granted = {grant[1:] for grant in _grants(role, "cluster")}
    assert granted == MIGRATION_PERMISSIONS  # what the hook does against kmock
    crd_rules = [r for r in role["rules"] if r["apiGroups"] == ["apiextensions.k8s.io"]]
    assert all(sorted(r["resourceNames"]) == sorted(c["metadata"]["name"] for c in CRDS.values())
               for r in crd_rules), "only the odradek CRDs may be read and have status patched"
    (binding,) = by_kind(hooks, "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    (job,) = by_kind(hooks, "Job")
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command == ["python3", "-m", "odradek_operator.storage_migration"]
    assert not [d for d in render(set_=("storageMigrationHook.enabled=false",))
                if (d["metadata"].get("annotations") or {}).get("helm.sh/hook")
                == "post-upgrade"]


@needs_helm
def test_listeners_tls_and_users_reach_the_cluster_its_policy_and_the_helm_test():
    docs = render(str(FULL_VALUES))
    (cluster,) = by_kind(docs, "BrokerCluster")
    parsed = BrokerClusterSpec.parse(cluster["spec"])
    assert [(lst.name, lst.port, lst.protocol) for lst in parsed.listeners] == [
        ("INTERNAL", 9091, "SASL_SSL"), ("CLIENTS", 9092, "SASL_SSL"),
        ("LEGACY", 9093, "PLAINTEXT")]
    assert parsed.tls is not None and parsed.tls.secret_name == "events-tls"
    assert parsed.tls.client_auth == "requested"
    assert [(u.name, u.mechanism, u.password.name, u.password.key)
            for u in parsed.authentication.users] == [
        ("pipeline", "SCRAM-SHA-512", "pipeline-user", "password"),
        ("dashboards", "SCRAM-SHA-256", "dashboards-user", "pw")]
    assert parsed.authentication.operator_secret is not None
    # Every listener port and the metrics port are open on the brokers.
    policy = next(p for p in by_kind(docs, "NetworkPolicy")
                  if p["metadata"]["name"] == "events-brokers")
    ports = {port["port"] for rule in policy["spec"]["ingress"] for port in rule["ports"]}
    assert ports == {9091, 9092, 9093, 9404}
    # helm test connects like the operator: inter-broker listener, TLS trust, SCRAM login.
    (test_pod,) = [p for p in by_kind(docs, "Pod")
                   if p["metadata"]["annotations"].get("helm.sh/hook") == "test"]
    container = test_pod["spec"]["containers"][0]
    script = container["command"][-1]
    assert "events-bootstrap.streaming.svc:9091" in script
    assert "security.protocol=SASL_SSL" in script and "ODRADEK_COMMAND_CONFIG" in script
    env = {e["name"]: e for e in container["env"]}
    assert env["SASL_MECHANISM"]["value"] == "SCRAM-SHA-512"
    assert env["SASL_PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "events-operator"
    assert test_pod["spec"]["volumes"][0]["secret"]["secretName"] == "events-tls"


@needs_helm
def test_the_single_port_cluster_renders_as_before():
    docs = render(set_=("cluster.enabled=true",))
    (cluster,) = by_kind(docs, "BrokerCluster")
    assert cluster["spec"]["listeners"] == {"port": 9092}
    assert "tls" not in cluster["spec"] and "authentication" not in cluster["spec"]
    policy = next(p for p in by_kind(docs, "NetworkPolicy")
                  if p["metadata"]["name"].endswith("-brokers"))
    assert [port["port"] for port in policy["spec"]["ingress"][0]["ports"]] == [9092]
    (test_pod,) = [p for p in by_kind(docs, "Pod")
                   if p["metadata"]["annotations"].get("helm.sh/hook") == "test"]
    assert "ODRADEK_COMMAND_CONFIG" not in test_pod["spec"]["containers"][0]["command"][-1]


@needs_helm
def test_outside_listeners_pass_type_class_and_configuration_through(tmp_path):
    values = tmp_path / "outside.yaml"
    values.write_text(yaml.safe_dump({"cluster": {"listeners": [
        {"name": "INTERNAL", "port": 9091, "securityProtocol": "SASL_SSL"},
        {"name": "ROUTED", "port": 9094, "securityProtocol": "SSL", "type": "ingress",
         "class": "nginx", "configuration": {
             "bootstrap": {"host": "kafka.example"},
             "brokers": [{"broker": b, "host": f"b{b}.kafka.example"} for b in range(5)]}}]}}))
    (cluster,) = by_kind(render(str(FULL_VALUES), str(values)), "BrokerCluster")
    routed = cluster["spec"]["listeners"]["named"][1]
    assert routed["type"] == "ingress" and routed["class"] == "nginx"
    parsed = BrokerClusterSpec.parse(cluster["spec"])
    access = parsed.listeners[1].external
    assert access is not None and access.broker(4).host == "b4.kafka.example"
    assert cluster["spec"]["listeners"]["named"][0].keys() == {"name", "port", "securityProtocol"}
