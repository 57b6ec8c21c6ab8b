"""The odradek Kubernetes operator (kopf): BrokerCluster, Topic and ConsumerGroup.

Layers, each importable and testable on its own:

* :mod:`.spec` — typed, validated views of the resources' specs;
* :mod:`.manifests` — pure builders, spec in, Kubernetes object dicts out;
* :mod:`.decisions` — pure decisions over observed state (may this broker restart now? which
  partitions move on scale-down? what does a reset compute?);
* :mod:`.kafka` and :mod:`.kube` — the only I/O: the Kafka admin protocol and the Kubernetes API;
* :mod:`.handlers` — kopf handlers that observe, decide and apply, one module per kind.

``kopf run -m odradek_operator`` imports this package, which registers every handler.
"""

from . import handlers, runtime

__all__ = ["handlers", "runtime"]
