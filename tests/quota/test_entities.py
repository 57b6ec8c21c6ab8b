"""Quota entities: Kafka's precedence order (exhaustively), sanitized names, validation."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.protocol.errors import InvalidRequest
from odradek.quota.entities import (
    DEFAULT,
    QuotaEntity,
    desanitize,
    resolve,
    sanitize,
    validate_value,
)

# Kafka's documented order, as paths: the reference the resolver is checked against.
ORDER = (
    "users/{u}/clients/{c}",
    "users/{u}/clients/<default>",
    "users/{u}",
    "users/<default>/clients/{c}",
    "users/<default>/clients/<default>",
    "users/<default>",
    "clients/{c}",
    "clients/<default>",
)
SHARED_BY = ("uc", "uc", "u", "uc", "uc", "u", "c", "c")  # who the matched quota is for


def _entities(user: str, client: str) -> list[QuotaEntity]:
    found = []
    for path in ORDER:
        entity = QuotaEntity.from_zk_path(path.format(u=sanitize(user), c=sanitize(client)))
        assert entity is not None
        found.append(entity)
    return found


names = st.text(min_size=1, max_size=12)


@pytest.mark.parametrize("present", list(itertools.product((False, True), repeat=8)))
def test_every_combination_of_levels_resolves_to_the_first_present(
    present: tuple[bool, ...],
) -> None:
    user, client = "alice", "app"
    levels = _entities(user, client)
    configured = {e: float(i + 1) for i, (e, on) in enumerate(zip(levels, present, strict=True))
                  if on}
    # entities of someone else never apply
    configured[QuotaEntity(sanitize("bob"), sanitize(client))] = 1000.0
    configured[QuotaEntity(None, sanitize("other"))] = 2000.0
    configured[QuotaEntity(sanitize("bob"), None)] = 3000.0
    tags, bound = resolve(configured, user, client)
    first = next((i for i, on in enumerate(present) if on), None)
    if first is None:
        assert (tags, bound) == (("", client), None)
        return
    assert bound == float(first + 1)
    expected_tags = {"uc": (user, client), "u": (user, ""), "c": ("", client)}[SHARED_BY[first]]
    assert tags == expected_tags


@given(user=names, client=names, present=st.lists(st.booleans(), min_size=8, max_size=8),
       values=st.lists(st.floats(0, 1e9), min_size=8, max_size=8))
def test_precedence_holds_for_any_names(
    user: str, client: str, present: list[bool], values: list[float]
) -> None:
    levels = _entities(user, client)
    configured = {e: v for e, on, v in zip(levels, present, values, strict=True) if on}
    _, bound = resolve(configured, user, client)
    chosen = next((v for on, v in zip(present, values, strict=True) if on), None)
    assert bound == chosen


@given(names)
def test_sanitized_names_round_trip_and_never_collide_with_default(name: str) -> None:
    cleaned = sanitize(name)
    assert desanitize(cleaned) == name
    assert "/" not in cleaned and cleaned != DEFAULT and "*" not in cleaned
    entity = QuotaEntity.from_protocol({"user": name, "client-id": None})
    assert entity.to_protocol() == {"user": name, "client-id": None}
    assert QuotaEntity.from_zk_path(entity.zk_path) == entity


def test_kafka_sanitizer_spellings() -> None:
    assert sanitize("User:x y*z~") == "User%3Ax%20y%2Az%7E"
    assert sanitize("<default>") == "%3Cdefault%3E"
    assert sanitize("a.b-c_d") == "a.b-c_d"


def test_zk_paths() -> None:
    assert QuotaEntity("u", "c").zk_path == "users/u/clients/c"
    assert QuotaEntity("u").zk_path == "users/u"
    assert QuotaEntity(None, DEFAULT).zk_path == "clients/<default>"
    for bad in ("users", "users/u/clients", "topics/t", "clients/", "users/u/x/c"):
        assert QuotaEntity.from_zk_path(bad) is None


@pytest.mark.parametrize("components", [{}, {"ip": "1.2.3.4"}, {"user": "u", "group": "g"},
                                        {"client-id": ""}])
def test_unsupported_entities_are_invalid_requests(components: dict[str, str | None]) -> None:
    with pytest.raises(InvalidRequest):
        QuotaEntity.from_protocol(components)


def test_values_are_validated_as_kafka_types() -> None:
    assert validate_value("producer_byte_rate", 1048576.0) == "1048576"
    assert validate_value("request_percentage", 12.5) == "12.5"
    for key, value in (("producer_byte_rate", 1.5), ("consumer_byte_rate", -1.0),
                       ("request_percentage", float("nan")), ("acl", 1.0)):
        with pytest.raises(InvalidRequest):
            validate_value(key, value)
