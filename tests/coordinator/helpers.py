"""A driver for the sans-IO group: an explicit clock and a record of every reply."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from odradek.config_sections import GroupCoordinatorConfig
from odradek.coordinator.group import Group, JoinRequest
from odradek.coordinator.results import (
    AppendRecords,
    JoinResult,
    Output,
    Reply,
    StoreGroup,
    SyncResult,
)
from odradek.coordinator.shard import CoordinatorShard
from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import Record

GROUP = "g"
CONFIG = GroupCoordinatorConfig(
    min_session_timeout_ms=1_000,
    initial_rebalance_delay_ms=0,
    offsets_topic_num_partitions=1,
)


def protocols(*names: str, metadata: bytes = b"m") -> tuple[tuple[str, bytes], ...]:
    return tuple((name, metadata) for name in names)


def join_request(
    member_id: str = "",
    *,
    client_id: str = "client",
    instance_id: str | None = None,
    session_ms: int = 10_000,
    rebalance_ms: int = 30_000,
    names: tuple[str, ...] = ("range",),
    metadata: bytes = b"m",
    require_known: bool = True,
) -> JoinRequest:
    return JoinRequest(
        member_id=member_id,
        group_instance_id=instance_id,
        client_id=client_id,
        client_host="/127.0.0.1",
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms,
        protocol_type="consumer",
        protocols=protocols(*names, metadata=metadata),
        require_known_member_id=require_known,
    )


@dataclass
class Driver:
    config: GroupCoordinatorConfig = CONFIG
    now: int = 1_000_000
    replies: dict[int, JoinResult | SyncResult] = field(default_factory=dict)
    stores: list[StoreGroup | AppendRecords] = field(default_factory=list)
    shard: CoordinatorShard = field(init=False)

    def __post_init__(self) -> None:
        counter = itertools.count()
        self.shard = CoordinatorShard(0, self.config, lambda: f"uuid{next(counter)}")
        self._tokens = itertools.count(1)

    @property
    def stored_records(self) -> list[Record]:
        """Every record the shard asked to append, in order."""
        return [record for store in self.stores
                for record in ((store.record,) if isinstance(store, StoreGroup) else store.records)]

    @property
    def group(self) -> Group:
        group = self.shard.group(GROUP)
        assert group is not None, "group does not exist"
        return group

    def _take(self, outputs: list[Output]) -> None:
        for output in outputs:
            if isinstance(output, Reply):
                assert output.token not in self.replies, f"token {output.token} answered twice"
                self.replies[output.token] = output.result
            else:
                self.stores.append(output)
                # Stored replies are released once the append commits; here it always does.
                for reply in output.replies:
                    self.replies[reply.token] = reply.result

    def join(self, request: JoinRequest) -> int:
        token = next(self._tokens)
        self._take(self.shard.join(self.now, token, GROUP, request))
        return token

    def sync(
        self, member_id: str, generation: int, assignments: Mapping[str, bytes] | None = None,
        instance_id: str | None = None,
    ) -> int:
        token = next(self._tokens)
        self._take(self.shard.sync(self.now, token, GROUP, member_id, instance_id, generation,
                                   assignments or {}))
        return token

    def heartbeat(
        self, member_id: str, generation: int, instance_id: str | None = None
    ) -> ErrorCode:
        return self.shard.heartbeat(self.now, GROUP, member_id, instance_id, generation)

    def leave(self, *members: tuple[str, str | None]) -> list[ErrorCode]:
        top, errors, out = self.shard.leave(self.now, GROUP, list(members))
        assert top is ErrorCode.none
        self._take(out)
        return errors

    def advance(self, ms: int) -> None:
        """Move the clock, firing every deadline on the way in order (as timers would)."""
        target = self.now + ms
        while True:
            deadline = self.shard.next_deadline(GROUP)
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            self._take(self.shard.poll(self.now, GROUP))
        self.now = target

    def join_result(self, token: int) -> JoinResult:
        result = self.replies.get(token)
        assert isinstance(result, JoinResult), f"join {token} not answered: {result}"
        return result

    def sync_result(self, token: int) -> SyncResult:
        result = self.replies.get(token)
        assert isinstance(result, SyncResult), f"sync {token} not answered: {result}"
        return result

    def new_member(self, client_id: str = "client", **kwargs: Any) -> str:
        """Join without an id (MEMBER_ID_REQUIRED) and return the assigned id."""
        token = self.join(join_request(client_id=client_id, **kwargs))
        result = self.join_result(token)
        assert result.error is ErrorCode.member_id_required, result
        return result.member_id

    def form_group(self, count: int) -> tuple[list[str], int]:
        """count dynamic members through the whole join/sync protocol; (ids, generation)."""
        ids = [self.new_member(f"c{i}") for i in range(count)]
        tokens = [self.join(join_request(member_id, client_id=f"c{i}"))
                  for i, member_id in enumerate(ids)]
        results = [self.join_result(t) for t in tokens]
        generation = results[0].generation_id
        leader = results[0].leader
        # Followers first, so they wait for the leader's assignment.
        order = [m for m in ids if m != leader] + [leader]
        sync_tokens = {m: self.sync(m, generation,
                                    {x: x.encode() for x in ids} if m == leader else None)
                       for m in order}
        for member_id, token in sync_tokens.items():
            assert self.sync_result(token).assignment == member_id.encode()
        return ids, generation
