"""Registers the group suite's fixtures (defined in :mod:`tests.groups.helpers`)."""

from tests.groups.helpers import group_broker, members

__all__ = ["group_broker", "members"]
