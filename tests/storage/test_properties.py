"""Property test: any sequence of log operations keeps the log's invariants.

Invariants checked after every step: offsets strictly increase across the whole log, every
readable batch passes its CRC, the log end is right after the last batch, and the records
still present are exactly what a simple model of the operations predicts (for keys whose
history compaction may have rewritten, only the latest value is compared).
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from odradek.protocol.records import decode_batches
from odradek.storage import open_log
from odradek.storage.cleaner import clean_log
from odradek.storage.retention import apply_retention
from tests.storage.helpers import BASE_TS, batch, read_all, small_config


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="odradek-prop-"))
        self.config = small_config(
            segment_bytes=600,
            index_interval_bytes=100,
            cleanup_policy="compact,delete",
            min_cleanable_dirty_ratio=0.0,
            retention_bytes=-1,
        )
        self.log = open_log(self.tmp / "prop-0", self.config)
        self.model: dict[int, tuple[bytes | None, bytes]] = {}  # offset -> (key, value)
        self.compacted_keys: set[bytes] = set()
        self.clock = BASE_TS

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @rule(
        values=st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=5),
        key=st.sampled_from([None, b"a", b"b", b"c"]),
        compression=st.sampled_from([0, 0, 1, 3]),
    )
    def append(self, values: list[bytes], key: bytes | None, compression: int) -> None:
        self.clock += 10
        info = self.log.append(
            batch(values, keys=[key] * len(values), timestamp=self.clock, compression=compression),
            leader_epoch=0,
        )
        for i, value in enumerate(values):
            self.model[info.first_offset + i] = (key, value)

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @rule(data=st.data())
    @precondition(lambda self: self.log.log_end_offset > self.log.high_watermark)
    def truncate(self, data: st.DataObject) -> None:
        # Like a follower: only uncommitted data (above the high watermark) is truncated; the
        # cleaner only compacts below the high watermark, so the two never meet.
        low = max(self.log.log_start_offset, self.log.high_watermark)
        target = data.draw(st.integers(low, self.log.log_end_offset), label="target")
        self.log.truncate_to(target)
        end = self.log.log_end_offset
        assert end <= max(target, self.log.log_start_offset)
        self.model = {o: kv for o, kv in self.model.items() if o < end}

    @rule(keep=st.integers(0, 3))
    def retention(self, keep: int) -> None:
        # retention.bytes as "keep about `keep` segments"
        config = dataclasses.replace(self.config, retention_bytes=keep * 600)
        self.log.update_config(config)
        apply_retention(self.log, self.clock)
        self.log.update_config(self.config)
        start = self.log.log_start_offset
        self.model = {o: kv for o, kv in self.model.items() if o >= start}

    @rule()
    def compact(self) -> None:
        self.log.update_high_watermark(self.log.log_end_offset)
        if clean_log(self.log, 0, now=self.clock) is not None:
            self.compacted_keys.update(k for k, _v in self.model.values() if k is not None)

    @rule()
    def reopen(self) -> None:
        # what LogManager's checkpoints carry across a restart
        high_watermark, log_start = self.log.high_watermark, self.log.log_start_offset
        self.log.close()
        self.log = open_log(
            self.tmp / "prop-0",
            self.config,
            high_watermark=high_watermark,
            log_start_offset=log_start,
        )

    @invariant()
    def log_is_consistent(self) -> None:
        batches = read_all(self.log)  # validates every CRC
        offsets = [r.offset for _h, records in batches for r in records]
        assert offsets == sorted(set(offsets)), "offsets must strictly increase"
        if batches:
            assert batches[-1][0].next_offset == self.log.log_end_offset
        present = {
            r.offset: (r.key, r.value)
            for _h, records in batches
            for r in records
            if r.offset >= self.log.log_start_offset
        }
        for offset, (key, value) in self.model.items():
            if key is not None and key in self.compacted_keys:
                continue
            assert present.get(offset) == (key, value), f"record at {offset} lost or changed"
        latest: dict[bytes, tuple[int, bytes]] = {}
        for offset, (key, value) in sorted(self.model.items()):
            if key is not None:
                latest[key] = (offset, value)
        for key, (offset, value) in latest.items():
            assert present.get(offset) == (key, value), f"latest value of {key!r} lost"
        # Reads that start mid-log, above all at the end (where a segment starts its scan at
        # the latest append instead of the index entry), begin at the batch holding the offset.
        for offset in sorted(present)[-6:]:
            result = self.log.read(offset, 1 << 20, isolation_high_watermark=False)
            assert result.region is not None, f"nothing read at {offset}"
            first = next(iter(decode_batches(result.region.read_bytes())))[0]
            assert first.base_offset <= offset <= first.last_offset, (
                f"read at {offset} began with batch {first.base_offset}..{first.last_offset}")


TestLogMachine = LogMachine.TestCase
TestLogMachine.settings = settings(
    max_examples=80,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
