"""Hypothesis strategies for kio message classes (bounded so property tests stay fast)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from kio.static import primitive
from kio.static.primitive import Records

# kio's phantom int/str types carry their own strategies; activate them once.
for _name in dir(primitive):
    _type = getattr(primitive, _name)
    if isinstance(_type, type) and hasattr(_type, "__hypothesis_hook__"):
        _type.__hypothesis_hook__()

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))


def messages(message_type: type) -> st.SearchStrategy[Any]:
    return st.from_type(message_type)
