"""The one JAAS line Kafka users write for SCRAM and PLAIN, read without a JVM.

``org.apache.kafka.common.security.scram.ScramLoginModule required username="alice"
password="secret";`` — the login module, a control flag, then ``key=value`` options
(values quoted or bare). Only the options matter to us: ``username`` and ``password``.
"""

from __future__ import annotations

import re

__all__ = ["parse_jaas"]

_LINE = re.compile(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s+(.*?)\s*;?\s*$",
                   re.DOTALL)
_OPTION = re.compile(r'\s*([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))')


def parse_jaas(text: str) -> tuple[str, str]:
    """(username, password) from a ScramLoginModule/PlainLoginModule JAAS line."""
    match = _LINE.fullmatch(text)
    if match is None:
        raise ValueError("expected '<LoginModule> required username=\"..\" password=\"..\";'")
    options: dict[str, str] = {}
    rest = match.group(3)
    position = 0
    while position < len(rest):
        option = _OPTION.match(rest, position)
        if option is None:
            if rest[position:].strip(" ;\n\t"):
                raise ValueError(f"cannot read options at {rest[position:position + 20]!r}")
            break
        quoted, bare = option.group(2), option.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        options[option.group(1)] = value
        position = option.end()
    try:
        return options["username"], options["password"]
    except KeyError:
        raise ValueError("the JAAS options need username and password") from None
