"""Reject frames whose length prefixes cannot fit, before kio's native reader sees them.

kio's native (Rust) reader sizes an array's vector from the array's length prefix before it
reads a single element. A hostile prefix (a compact array claiming 2^35 entries in a 60-byte
frame) makes that allocation fail, and Rust answers a failed allocation by aborting the
process: no Python exception, the whole broker is gone. So every frame is walked first by a
checker that reads only lengths and skips everything else, and refuses any array that
claims more elements than the rest of the frame could hold (each element takes at least
its minimum encoded size). Strings and bytes are bounds-checked by kio itself.

The checker mirrors kio's codec rules exactly (those of ``kio.serial.entity_writer``, which
kio's reader inverts): flexible versions use compact strings, bytes and arrays (unsigned
varint length + 1, 0 = null) and end each entity with a tagged-field section; older versions
use int16 string, int32 bytes and int32 array lengths (-1 = null); a nullable struct is an
int8 marker (-1 = null) before the struct; a tagged field's value is read like a plain field
that cannot be null. kio parses a known tagged field by its content, not by its declared
size, so the checker insists the two agree — otherwise it and kio would read the bytes after
it differently. Because these rules are kio's private ones, kio is pinned below its next
minor release, and a test checks on every message that the guard and kio's reader end at the
same byte.

A checker is Python source generated once per message class from its dataclass fields
(kio's schema) and compiled: on the Produce and Fetch paths it costs a few hundred
nanoseconds per topic and partition, far below the native decode it protects.
"""

from __future__ import annotations

import dataclasses
import struct
import typing
from collections.abc import Callable
from functools import cache

from .schema import FieldShape, field_shapes

__all__ = ["FrameLengthError", "check_lengths", "checker_for"]

Checker = Callable[[memoryview | bytes, int, int], int]
"""``(buffer, offset, end) -> offset after the entity``; raises :class:`FrameLengthError`."""

# Encoded size of each fixed-width kio type.
_FIXED_SIZES = {
    "bool": 1, "int8": 1, "uint8": 1,
    "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4,
    "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8, "datetime_i64": 8,
    "uuid": 16,
}
_LENGTH_PREFIXED = {"string", "bytes", "records"}

_INT16 = struct.Struct(">h").unpack_from
_INT32 = struct.Struct(">i").unpack_from


class FrameLengthError(ValueError):
    """A length prefix in the frame is impossible (runs past the frame, or over-long)."""


def _uvarint(buffer: memoryview | bytes, offset: int) -> tuple[int, int]:
    """Kafka's unsigned varint (at most 5 bytes, as Kafka's ``ByteUtils`` reads it)."""
    value = 0
    shift = 0
    for index in range(offset, offset + 5):
        byte = buffer[index]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, index + 1
        shift += 7
    raise FrameLengthError("unsigned varint longer than 5 bytes")


def _too_many(count: int, element: int, offset: int, end: int) -> FrameLengthError:
    return FrameLengthError(
        f"array of {count} elements (at least {element} bytes each) at offset {offset} "
        f"does not fit in the {max(end - offset, 0)} bytes left"
    )


def _null_array(name: str) -> FrameLengthError:
    return FrameLengthError(f"null for the non-nullable array {name}")


def _tag_mismatch(tag: int, size: int, used: int) -> FrameLengthError:
    return FrameLengthError(f"tagged field {tag} declares {size} bytes but holds {used}")


@dataclasses.dataclass(frozen=True, slots=True)
class _Shape:
    """One field as the checker walks it."""

    kind: str  # "fixed", "string" (also bytes/records), "entity"
    array: bool
    nullable: bool
    size: int = 0  # fixed width; for "string", the legacy length prefix's width
    entity: type | None = None
    null_refused: bool = False  # an array that must not arrive as null (see _shape)


def _shape(field: FieldShape) -> _Shape:
    # kio reads a null where a non-nullable array belongs as None (a null string it refuses
    # itself), and handlers iterate the field: refuse it here, as Kafka's reader does. Not
    # for tagged fields, which the schema reads without a null marker.
    null_refused = field.array and not field.nullable and field.tag is None
    if field.entity is not None:
        return _Shape("entity", field.array, field.nullable, entity=field.entity,
                      null_refused=null_refused)
    kafka_type = field.kafka_type or ""
    if kafka_type in _FIXED_SIZES:
        return _Shape("fixed", field.array, field.nullable, size=_FIXED_SIZES[kafka_type],
                      null_refused=null_refused)
    if kafka_type in _LENGTH_PREFIXED:
        # int16 length for a legacy string, int32 for legacy bytes; compact: a varint.
        return _Shape("string", field.array, field.nullable,
                      size=2 if kafka_type == "string" else 4, null_refused=null_refused)
    raise TypeError(f"{field.name}: unknown kafka_type {kafka_type!r}")


@cache
def _minimum_size(entity: type) -> int:
    """The fewest bytes one encoded ``entity`` can take."""
    flexible = bool(entity.__flexible__)  # type: ignore[attr-defined]
    total = 1 if flexible else 0  # the tagged-field count
    for field in field_shapes(entity):
        if field.tag is None:
            total += _shape_minimum(_shape(field), flexible)
    return total


def _shape_minimum(shape: _Shape, flexible: bool) -> int:
    if shape.array:
        return 1 if flexible else 4
    if shape.kind == "fixed":
        return shape.size
    if shape.kind == "string":
        return 1 if flexible else shape.size
    assert shape.entity is not None
    return 1 if shape.nullable else _minimum_size(shape.entity)


class _Source:
    """Accumulates the generated functions of one message class and its nested entities."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[type, str] = {}
        self.pending: list[type] = []
        self.namespace: dict[str, typing.Any] = {
            "_uvarint": _uvarint, "_INT16": _INT16, "_INT32": _INT32,
            "_too_many": _too_many, "_tag_mismatch": _tag_mismatch, "_null_array": _null_array,
        }

    def name_of(self, entity: type) -> str:
        name = self.names.get(entity)
        if name is None:
            name = f"_check_{len(self.names)}_{entity.__name__}"
            self.names[entity] = name
            self.pending.append(entity)
        return name

    def emit_entity(self, entity: type) -> None:
        flexible = bool(entity.__flexible__)  # type: ignore[attr-defined]
        body: list[str] = []
        tagged: list[tuple[int, FieldShape]] = []
        fixed_run = 0
        for field in field_shapes(entity):
            if field.tag is not None:
                tagged.append((field.tag, field))
                continue
            shape = _shape(field)
            if shape.kind == "fixed" and not shape.array:
                fixed_run += shape.size
                continue
            if fixed_run:
                body.append(f"pos += {fixed_run}")
                fixed_run = 0
            body.extend(self.field_lines(shape, flexible, field.name))
        if fixed_run:
            body.append(f"pos += {fixed_run}")
        if flexible:
            body.extend(self.tagged_section_lines(entity, tagged))
        name = self.name_of(entity)
        self.lines.append(f"def {name}(buf, pos, end):")
        self.lines.extend("    " + line for line in body)
        self.lines.append("    return pos")
        self.lines.append("")

    def field_lines(self, shape: _Shape, flexible: bool, label: str) -> list[str]:
        if shape.array:
            return self.array_lines(shape, flexible, label)
        return self.value_lines(shape, flexible)

    def value_lines(self, shape: _Shape, flexible: bool) -> list[str]:
        if shape.kind == "fixed":
            return [f"pos += {shape.size}"]
        if shape.kind == "string":
            if flexible:
                return [
                    "n = buf[pos]",
                    "if n < 128:",
                    "    pos += 1",
                    "else:",
                    "    n, pos = _uvarint(buf, pos)",
                    "if n > 1:",
                    "    pos += n - 1",
                ]
            reader = "_INT16" if shape.size == 2 else "_INT32"
            return [f"n = {reader}(buf, pos)[0]", f"pos += {shape.size}",
                    "if n > 0:", "    pos += n"]
        assert shape.entity is not None
        call = f"pos = {self.name_of(shape.entity)}(buf, pos, end)"
        if shape.nullable:
            # kio reads any marker other than -1 as "present".
            return ["pos += 1", "if buf[pos - 1] != 255:", "    " + call]
        return [call]

    def array_lines(self, shape: _Shape, flexible: bool, label: str) -> list[str]:
        # At least one byte each, so a walk over any array is bounded by the frame's size.
        element = max(1, _shape_minimum(dataclasses.replace(shape, array=False,
                                                            nullable=False), flexible))
        if flexible:
            lines = [
                "n = buf[pos]",
                "if n < 128:",
                "    pos += 1",
                "else:",
                "    n, pos = _uvarint(buf, pos)",
                "n -= 1",  # compact: length + 1, 0 = null
            ]
        else:
            lines = ["n = _INT32(buf, pos)[0]", "pos += 4"]
        if shape.null_refused:
            lines += ["if n < 0:", f"    raise _null_array({label!r})"]
        lines += ["if n > 0:",
                  f"    if n * {element} > end - pos:",
                  f"        raise _too_many(n, {element}, pos, end)"]
        if shape.kind == "fixed":
            lines.append(f"    pos += n * {shape.size}")
            return lines
        inner = self.value_lines(dataclasses.replace(shape, array=False, nullable=False),
                                 flexible)
        # Nested loops reuse ``n``; keep this loop's counter apart.
        counter = f"_i_{label}"
        lines.append(f"    for {counter} in range(n):")
        lines.extend("        " + line for line in inner)
        return lines

    def tagged_section_lines(
        self, entity: type, tagged: list[tuple[int, FieldShape]]
    ) -> list[str]:
        # Almost every entity on the wire carries no tagged field: one byte, 0.
        lines = [
            "if buf[pos] == 0:",
            "    pos += 1",
            "else:",
            "    count, pos = _uvarint(buf, pos)",
            "    for _tag_index in range(count):",
            "        tag, pos = _uvarint(buf, pos)",
            "        size, pos = _uvarint(buf, pos)",
            "        start = pos",
        ]
        if not tagged:
            lines.append("        pos += size")
        else:
            for position, (tag, field) in enumerate(tagged):
                keyword = "if" if position == 0 else "elif"
                lines.append(f"        {keyword} tag == {tag}:")
                shape = _shape(field)
                value = self.field_lines(shape, True, f"tag{tag}")
                lines.extend("            " + line for line in value)
                lines += ["            if pos != start + size:",
                          "                raise _tag_mismatch(tag, size, pos - start)"]
            lines += ["        else:", "            pos += size"]
        lines += ["        if pos > end:", "            break"]
        return lines

    def compile(self, root: type) -> Checker:
        self.name_of(root)
        while self.pending:
            self.emit_entity(self.pending.pop())
        code = compile("\n".join(self.lines), f"<length checker for {root.__name__}>", "exec")
        exec(code, self.namespace)  # source generated above from kio's schema, not from input
        return typing.cast(Checker, self.namespace[self.names[root]])


@cache
def checker_for(message_type: type) -> Checker:
    """The compiled length checker of one kio message class (built once, then cached)."""
    return _Source().compile(message_type)


def check_lengths(message_type: type, buffer: memoryview | bytes, offset: int) -> int:
    """Walk one ``message_type`` at ``offset``; return where it ends.

    :raises FrameLengthError: an array claims more elements than the frame can hold, or a
        length or tagged field runs past the end of the frame.
    """
    end = len(buffer)
    try:
        stop = checker_for(message_type)(buffer, offset, end)
    except (IndexError, struct.error) as exc:
        raise FrameLengthError(f"frame ends inside a field ({exc})") from exc
    if stop > end:
        raise FrameLengthError(f"fields run {stop - end} bytes past the end of the frame")
    return stop
