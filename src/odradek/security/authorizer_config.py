"""``authorizer.class.name`` and ``super.users``: which names turn ACLs on, and their checks.

Kafka's ZooKeeper-mode class names are accepted as they are, so a Kafka
``server.properties`` works unchanged; ``acl`` is odradek's short alias for the same.
"""

from __future__ import annotations

__all__ = ["AUTHORIZER_CLASS_NAMES", "authorizer_enabled", "parse_super_users",
           "validate_authorizer"]

AUTHORIZER_CLASS_NAMES = frozenset({
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
    "acl",
})


def authorizer_enabled(class_name: str) -> bool:
    return bool(class_name.strip())


def parse_super_users(value: str) -> frozenset[str]:
    """``User:admin;User:broker`` -> the principals (ValueError for one without a type)."""
    users = set()
    for item in value.split(";"):
        item = item.strip()
        if not item:
            continue
        kind, sep, name = item.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"super.users: {item!r} is not <type>:<name> (User:admin)")
        users.add(item)
    return frozenset(users)


def validate_authorizer(class_name: str, super_users: str) -> None:
    class_name = class_name.strip()
    if class_name and class_name not in AUTHORIZER_CLASS_NAMES:
        raise ValueError(f"authorizer.class.name {class_name!r} is not supported (supported: "
                         f"{', '.join(sorted(AUTHORIZER_CLASS_NAMES))})")
    parse_super_users(super_users)
