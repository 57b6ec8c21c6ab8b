"""Realistic activity events for the reference pipeline (pure: no I/O).

What a web site's front ends log: page views, clicks on links of the page being viewed,
searches and logins, as JSON with user, session, page, referrer and an event timestamp.
Traffic is skewed the way real traffic is — a few users and pages get most of it (Zipf),
and every quarter of an hour some page trends — and events arrive a little out of order
(front ends batch their logs), which is what the stream job's event-time watermark is for.
Keys are user ids, so one user's events stay in order in one partition.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate

__all__ = ["Event", "EventGenerator"]

SECTIONS = ("home", "news", "sports", "tech", "jobs", "people", "search", "settings")
AGENTS = ("Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0",
          "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) Safari/605.1.15",
          "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) Mobile/15E148",
          "Mozilla/5.0 (Windows NT 10.0; Win64; x64) Chrome/131.0")
QUERIES = ("kafka", "spark streaming", "jobs in berlin", "python", "data engineer",
           "weather", "log processing", "zookeeper")


@dataclass(frozen=True)
class Event:
    key: bytes
    value: bytes
    event_time_ms: int
    type: str


@dataclass
class _Session:
    user: str
    session: str
    page: str
    ends_after: int
    fresh: bool = True


@dataclass
class EventGenerator:
    """An endless, reproducible stream of events on a simulated clock.

    ``speedup`` simulated milliseconds pass per real one at ``rate`` events per real second,
    so a one-minute demo covers half an hour of site traffic and many one-minute windows.
    """

    seed: int = 42
    users: int = 20_000
    pages: int = 400
    start_ms: int = 1_767_225_600_000       # 2026-01-01T00:00:00Z
    rate: float = 2_000.0                   # events per real second
    speedup: float = 30.0
    max_lateness_ms: int = 20_000           # front ends ship logs up to this late
    _rnd: random.Random = field(init=False, repr=False)
    _sessions: list[_Session] = field(init=False, repr=False, default_factory=list)
    _page_names: list[str] = field(init=False, repr=False, default_factory=list)
    _page_weights: list[float] = field(init=False, repr=False, default_factory=list)
    _user_weights: list[float] = field(init=False, repr=False, default_factory=list)
    _now: int = field(init=False, repr=False, default=0)

    def __post_init__(self) -> None:
        self._rnd = random.Random(self.seed)
        self._page_names = [f"/{SECTIONS[i % len(SECTIONS)]}/{i}" for i in range(self.pages)]
        # Zipf-like popularity; cumulative weights make each draw a binary search.
        self._page_weights = list(accumulate(1 / (i + 1) ** 1.1 for i in range(self.pages)))
        self._user_weights = list(accumulate(1 / (i + 1) ** 0.9 for i in range(self.users)))

    def _page(self) -> str:
        rnd = self._rnd
        if rnd.random() < 0.12:  # the story of the hour: a page trends for 15 minutes
            return self._page_names[(self._now // 900_000 * 7919) % self.pages]
        return rnd.choices(self._page_names, cum_weights=self._page_weights)[0]

    def _new_session(self) -> _Session:
        rnd = self._rnd
        user = rnd.choices(range(self.users), cum_weights=self._user_weights)[0]
        return _Session(f"u{user:06d}", f"{rnd.getrandbits(48):012x}", self._page(),
                        rnd.randint(2, 25))

    def _next(self, index: int) -> Event:
        rnd = self._rnd
        now = self._now = self.start_ms + int(index * 1000 * self.speedup / self.rate)
        if len(self._sessions) < 200 or rnd.random() < 0.05:
            self._sessions.append(self._new_session())
        slot = rnd.randrange(len(self._sessions))
        session = self._sessions[slot]
        roll = rnd.random()
        referrer = session.page
        body: dict[str, object] = {}
        if session.fresh and roll < 0.3:
            kind = "login"
            body["method"] = rnd.choice(("password", "sso", "token"))
        elif roll < 0.62:
            kind = "page_view"
            session.page = self._page()
        elif roll < 0.80:
            kind = "click"
            body["target"] = self._page()
        else:
            kind = "search"
            body["query"] = rnd.choice(QUERIES)
            body["results"] = rnd.randint(0, 200)
        session.fresh = False
        session.ends_after -= 1
        if session.ends_after <= 0:
            self._sessions.pop(slot)
        event_time = now - int(rnd.expovariate(1 / 2000)) % self.max_lateness_ms
        record = {"type": kind, "user": session.user, "session": session.session,
                  "page": session.page, "referrer": referrer,
                  "event_time": event_time, "agent": rnd.choice(AGENTS), **body}
        return Event(session.user.encode(), json.dumps(record, separators=(",", ":")).encode(),
                     event_time, kind)

    def events(self, count: int, first: int = 0) -> Iterator[Event]:
        for index in range(first, first + count):
            yield self._next(index)
