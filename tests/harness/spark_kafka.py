"""Spark's own Kafka connector (``spark-sql-kafka-0-10``) for the installed pyspark, from
Maven Central, as a reference for ``format("odradek")``.

The connector is fetched for the installed Spark version; when Maven Central does not serve
that version (pyspark can be newer than the last connector release), the nearest older
release in :data:`FALLBACK_VERSIONS` is used and :attr:`SparkKafkaConnector.version` says
which. Only the jars Spark does not ship itself are returned (the connector, the token
provider, kafka-clients, commons-pool2), as ``spark-submit --packages`` would resolve them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.harness.maven import copy_dependencies

REPO_ROOT = Path(__file__).resolve().parents[2]
POM = REPO_ROOT / "bench" / "spark-kafka" / "pom.xml"
CACHE_ROOT = REPO_ROOT / ".cache" / "spark-kafka"
#: Connector releases to fall back on, newest first, when the installed version is not served.
FALLBACK_VERSIONS = ("4.2.0", "4.1.1", "4.0.1")

#: Remembers (in the cache) that Maven Central has no connector for a version.
NOT_SERVED = ".not-served"
_MISSING = re.compile(r"could not find artifact|was not found in", re.IGNORECASE)
_VERSIONED_JAR = re.compile(r"^(?P<name>.+?)-\d[\w.\-]*\.jar$")

__all__ = ["SparkKafkaConnector"]


def _artifact(jar: Path) -> str:
    match = _VERSIONED_JAR.match(jar.name)
    return match.group("name") if match else jar.stem


class SparkKafkaConnector:
    def __init__(self, spark_version: str | None = None) -> None:
        import pyspark

        self.spark_version = spark_version or pyspark.__version__
        self.spark_jars = Path(pyspark.__file__).parent / "jars"
        self.version: str | None = None
        self.unavailable_reason: str | None = None

    def jars(self) -> list[str] | None:
        """Paths for ``spark.jars``; None (and :attr:`unavailable_reason`) if they cannot be
        fetched."""
        candidates = [self.spark_version, *(v for v in FALLBACK_VERSIONS
                                            if v != self.spark_version)]
        reasons = []
        for version in candidates:
            libs = CACHE_ROOT / version / "libs"
            not_served = CACHE_ROOT / version / NOT_SERVED
            if not_served.exists():
                reasons.append(f"{version}: {not_served.read_text().strip()}")
                continue
            reason = copy_dependencies(POM, libs, properties={"spark.version": version},
                                       expect="spark-sql-kafka-0-10_2.13-*.jar")
            if reason is not None and _MISSING.search(reason):
                not_served.write_text("not on Maven Central\n")
            if reason is None:
                self.version = version
                shipped = {_artifact(j) for j in self.spark_jars.glob("*.jar")}
                return sorted(str(j) for j in libs.glob("*.jar")
                              if _artifact(j) not in shipped)
            reasons.append(f"{version}: {reason}")
            if not _MISSING.search(reason):
                break  # no Maven or no network: another version will not help
        self.unavailable_reason = "; ".join(reasons)
        return None


if __name__ == "__main__":
    connector = SparkKafkaConnector()
    found = connector.jars()
    if found is None:
        print(f"unavailable: {connector.unavailable_reason}", file=sys.stderr)
        sys.exit(1)
    print(f"spark-sql-kafka-0-10 {connector.version} for pyspark {connector.spark_version}")
    print("\n".join(found))
