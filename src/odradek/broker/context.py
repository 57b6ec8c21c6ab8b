"""What a request handler gets to see: the broker's services and the request's origin."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from odradek.config_sections import BrokerSections
from odradek.protocol.errors import RequestTimedOut
from odradek.protocol.messages import RequestHeader
from odradek.security.acl import AUTHORIZED_OPERATIONS_OMITTED, Operation, ResourceType

from .authenticator import ANONYMOUS, ConnectionSession

if TYPE_CHECKING:
    from odradek.cluster.acls import AclCache
    from odradek.cluster.view import ClusterSnapshot
    from odradek.config import BrokerConfig
    from odradek.coordinator import GroupCoordinator
    from odradek.coordinator.txn_coordinator import TransactionCoordinator
    from odradek.metrics import BrokerMetrics
    from odradek.quota import QuotaManager
    from odradek.replication import ReplicaManager
    from odradek.storage import LogManager

    from .cluster_facade import ClusterFacade
    from .producer_ids import ProducerIdManager
    from .reconfigure import DynamicBrokerConfig
    from .throttling import ChannelThrottle

__all__ = ["ANONYMOUS", "BrokerServices", "RequestContext"]



class AccessPolicy(Protocol):
    """The decisions requests ask of an authorizer (:class:`.authorizer.Authorizer`, which
    reads the request context: a Protocol here, so the context does not import it back)."""

    def authorize(self, ctx: RequestContext, operation: Operation,
                  resource_type: ResourceType, name: str) -> bool: ...
    def allowed(self, ctx: RequestContext, operation: Operation,
                resource_type: ResourceType, name: str) -> bool: ...
    def allowed_any(self, ctx: RequestContext, operation: Operation,
                    resource_type: ResourceType) -> bool: ...
    def operations(self, ctx: RequestContext, resource_type: ResourceType,
                   name: str) -> int: ...
    @property
    def cache(self) -> AclCache: ...


@dataclass
class BrokerServices:
    """Long-lived parts of a running broker, shared by all handlers.

    Built once by :meth:`Broker.start <odradek.broker.server.Broker.start>` before any
    listener serves, so a handler finds every required service in place.
    """

    broker_id: int
    config: BrokerConfig
    cluster: ClusterFacade
    replica_manager: ReplicaManager
    producer_ids: ProducerIdManager
    log_manager: LogManager
    group_coordinator: GroupCoordinator
    dynamic_config: DynamicBrokerConfig
    metrics: BrokerMetrics | None = None  # None: nothing recorded (unit tests of handlers)
    quotas: QuotaManager | None = None  # client quotas (None: none enforced)
    authorizer: AccessPolicy | None = None  # ACLs (None: authorizer.class.name unset, all open)
    _transaction_coordinator: TransactionCoordinator | None = field(default=None, repr=False)
    _sections: tuple[BrokerConfig, BrokerSections] | None = field(default=None, repr=False)

    @property
    def sections(self) -> BrokerSections:
        """The typed sections of ``config`` (built on first use unless given with it)."""
        cached = self._sections
        if cached is None or cached[0] is not self.config:
            cached = self._sections = (self.config, BrokerSections.from_config(self.config))
        return cached[1]

    def use_config(self, config: BrokerConfig, sections: BrokerSections) -> None:
        """A new effective config and its sections (dynamic broker configs)."""
        self.config = config
        self._sections = (config, sections)

    @property
    def transaction_coordinator(self) -> TransactionCoordinator:
        """The transaction coordinator.

        Not a constructor argument, unlike the group coordinator: its marker writer writes
        through these services (the replica manager, the group coordinator, the cluster
        view), so :meth:`Broker.start <odradek.broker.server.Broker.start>` builds it right
        after them and attaches it (:meth:`attach_transaction_coordinator`) before any
        listener serves.
        """
        coordinator = self._transaction_coordinator
        if coordinator is None:
            raise RuntimeError("transaction coordinator not attached (broker not started)")
        return coordinator

    def attach_transaction_coordinator(self, coordinator: TransactionCoordinator) -> None:
        self._transaction_coordinator = coordinator

    async def wait_for_view(
        self, predicate: Callable[[ClusterSnapshot], bool], timeout_s: float
    ) -> None:
        """Wait until the cluster view satisfies ``predicate`` (admin requests' timeout)."""
        try:
            await self.cluster.view.wait_for(predicate, timeout_s)
        except TimeoutError:
            message = f"cluster metadata did not update within {timeout_s:g}s"
            raise RequestTimedOut(message) from None


class RequestContext(NamedTuple):
    """Immutable, one per request. A named tuple rather than a frozen dataclass: the
    connection builds one for every request, and a frozen dataclass's ``__init__`` costs an
    ``object.__setattr__`` per field."""

    services: BrokerServices
    header: RequestHeader
    listener: str
    peer: str
    session: ConnectionSession
    throttle: ChannelThrottle | None = None  # the connection's quota mute

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def principal(self) -> str:
        """Who sent this request: ``User:<name>`` after SASL, ``User:<subject DN>`` for a
        client certificate, else ``User:ANONYMOUS`` (what authorizers and quotas key on)."""
        return self.session.principal

    # -- authorization (Kafka's AuthHelper): handlers ask, and answer a denial themselves --

    def authorize(self, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        """May this request's principal do ``operation`` on the resource; a denial is
        counted and logged. Always True without an authorizer (``authorizer.class.name``
        unset)."""
        authorizer = self.services.authorizer
        return authorizer is None or authorizer.authorize(self, operation, resource_type, name)

    def allowed(self, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        """The decision alone, neither counted nor logged: for what an answer leaves out
        (Kafka's ``logIfDenied = false``)."""
        authorizer = self.services.authorizer
        return authorizer is None or authorizer.allowed(self, operation, resource_type, name)

    def allowed_any(self, operation: Operation, resource_type: ResourceType) -> bool:
        """Whether some resource of the type would allow ``operation`` (Kafka's
        authorizeByResourceType), neither counted nor logged."""
        authorizer = self.services.authorizer
        return authorizer is None or authorizer.allowed_any(self, operation, resource_type)

    def authorized_operations(self, resource_type: ResourceType, name: str) -> int:
        """The ``authorized_operations`` bit set of one resource (bit n = operation n);
        without an authorizer Kafka's "omitted"."""
        authorizer = self.services.authorizer
        if authorizer is None:
            return AUTHORIZED_OPERATIONS_OMITTED
        return authorizer.operations(self, resource_type, name)
