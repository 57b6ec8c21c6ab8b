"""Quotas key on the principal SASL established: a user quota for ``alice`` throttles her
SASL connections and not ``bob``'s, with the same client id (real librdkafka producers)."""

from __future__ import annotations

import threading
import time
from typing import Any

from odradek.client.sync import AdminClient
from odradek.quota import QuotaType

from .conftest import BrokerStarter
from .inprocess import InProcessBroker
from .quota_wire import alter_quotas
from .security_support import bootstrap
from .test_quota_enforcement import MIB, Run, _topic


def test_a_user_quota_applies_to_the_sasl_principal(start_broker: BrokerStarter) -> None:
    broker: InProcessBroker = start_broker(
        listeners="PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        inter_broker_listener_name="PLAINTEXT", sasl_enabled_mechanisms="SCRAM-SHA-256",
        quota_window_num="2", quota_window_size_seconds="1")
    admin = AdminClient(bootstrap(broker, "PLAINTEXT"))
    try:
        admin.alter_user_scram_credentials(upsert=[("alice", "SCRAM-SHA-256", "a-pw"),
                                                   ("bob", "SCRAM-SHA-256", "b-pw")])
    finally:
        admin.close()
    assert alter_quotas(broker.port, {"user": "alice"},
                        {"producer_byte_rate": float(MIB // 2)})[0] == "none"
    topic = _topic(broker)

    def login(user: str, password: str) -> dict[str, Any]:
        return {"bootstrap.servers": bootstrap(broker, "SASL_PLAINTEXT"),
                "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.username": user, "sasl.password": password}

    alice = Run(broker, topic, "same-app", **login("alice", "a-pw"))
    bob = Run(broker, topic, "same-app", **login("bob", "b-pw"))
    other = threading.Thread(target=bob.produce, args=(8, 8_000))
    begin = time.monotonic()
    other.start()
    alice.produce(8)
    other.join(60)
    rate = alice.rate(begin + 2, begin + 8)
    assert rate <= 0.65 * MIB, f"alice at {rate / MIB:.3f} MiB/s over a 0.5 MiB/s quota"
    assert alice.throttle_max_ms > 0 and alice.errors == []
    assert bob.throttle_max_ms == 0 and bob.errors == [] and len(bob.acked) == 8_000
    assert broker.broker is not None
    states = {(s.kind, s.user) for s in broker.broker.quotas.quota_states()
              if s.throttled_total > 0}
    assert (QuotaType.PRODUCE, "alice") in states
    assert (QuotaType.PRODUCE, "bob") not in states
