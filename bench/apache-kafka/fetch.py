"""Fetch Apache Kafka's jars (broker, tools, clients, log4j backend) from Maven Central.

    python bench/apache-kafka/fetch.py [VERSION]

Runs ``mvn dependency:copy-dependencies`` on ``pom.xml`` beside this file into
``.cache/apache-kafka/<version>/libs`` once; later runs print the existing directory.
Exits 1 with the reason when Java, Maven or Maven Central is unavailable. The same
function backs the interop tests and ``bench/bench_broker.py``
(``tests.harness.apache_kafka.ApacheKafka.fetch_jars``).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.harness.apache_kafka import main

if __name__ == "__main__":
    sys.exit(main())
