"""Produce activity events to the ``activity`` topic (the front ends' log collection).

    python -m examples.pipeline.generate [--bootstrap-server B] [--events N] [--rate R]

Bounded by ``--events`` and ``--seconds``; paced at ``--rate`` events per second, with a
progress bar. Events are keyed by user (see :mod:`events`), sent with odradek's idempotent
producer (acks=all, lz4).
"""

from __future__ import annotations

import argparse
import time

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from odradek.client import Producer

from .events import EventGenerator
from .topics import ACTIVITY, DEFAULT_BOOTSTRAP, ensure_topics


def produce(bootstrap: str, events: int, rate: float, seconds: float, *, first: int = 0,
            seed: int = 42, speedup: float = 30.0, show: bool = True) -> int:
    """Send up to ``events`` events (starting at event number ``first``) at ``rate`` per
    second for at most ``seconds``; returns how many were acknowledged. Event times advance
    ``speedup`` times faster than the real clock at ``rate``."""
    generator = EventGenerator(seed=seed + first, rate=min(rate, 2_000.0), speedup=speedup)
    deadline = time.monotonic() + seconds
    start = time.monotonic()
    sent = 0
    with Producer(bootstrap, compression_type="lz4", linger_ms=20) as producer, \
            Progress(TextColumn("[bold]generate[/] → activity"), BarColumn(),
                     MofNCompleteColumn(), TextColumn("{task.fields[rate]:>8.0f} ev/s"),
                     disable=not show) as progress:
        task = progress.add_task("events", total=events, rate=0.0)
        for event in generator.events(events, first):
            producer.send(ACTIVITY, event.value, key=event.key)
            sent += 1
            if sent % 500 == 0:
                elapsed = time.monotonic() - start
                progress.update(task, completed=sent, rate=sent / max(elapsed, 1e-3))
                ahead = sent / rate - elapsed
                if ahead > 0:
                    time.sleep(ahead)
                if time.monotonic() > deadline:
                    break
        producer.flush()
        progress.update(task, completed=sent, total=sent)
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m examples.pipeline.generate")
    parser.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=2_000)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--first", type=int, default=0,
                        help="number of the first event (continue an earlier run)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args()
    ensure_topics(args.bootstrap_server)
    sent = produce(args.bootstrap_server, args.events, args.rate, args.seconds,
                   first=args.first, show=not args.quiet)
    if not args.quiet:
        print(f"{sent} events sent to topic {ACTIVITY}")


if __name__ == "__main__":
    main()
