"""Hypothesis strategies for kio message classes (bounded so property tests stay fast)."""

from __future__ import annotations

import datetime
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

# kio writes a timedelta as round(float seconds * 1000): near timedelta.max that float
# rounds past what a timedelta holds and the read overflows (kio's own strategy draws
# such values). Below 2**43 ms (278 years) the float is exact to the millisecond.
_MAX_EXACT_MILLIS = 2**43
st.register_type_strategy(
    primitive.i64Timedelta,
    st.integers(-_MAX_EXACT_MILLIS, _MAX_EXACT_MILLIS).map(
        lambda ms: primitive.i64Timedelta.parse(datetime.timedelta(milliseconds=ms))
    ),
)


def messages(message_type: type) -> st.SearchStrategy[Any]:
    return st.from_type(message_type)
