"""Observable instruments read from live objects at collection time.

Domain numbers (queue depths, leadership, server lists) already live in the
services' own state; reading them when Prometheus scrapes costs nothing per
event and cannot drift from what ``GetBrokerStats`` answers. An instrument
is created once per process and name; each live object registers a reader
and unregisters it when it stops (tests run many servers in one process).

A reader returns ``(value, attributes)`` pairs. A reader that raises is
skipped for that collection (logged at debug): one broken gauge must not
cost the whole scrape.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

log = logging.getLogger(__name__)

Reader = Callable[[], Iterable[tuple[float, Mapping[str, Any]]]]
Kind = Literal["gauge", "counter", "updown"]

_lock = threading.Lock()
_readers: dict[str, list[Reader]] = {}


def observe(name: str, read: Reader, *, kind: Kind = "gauge", unit: str = "",
            description: str = "") -> Callable[[], None]:
    """Report ``read()`` as instrument ``name``; returns the unregister call."""
    with _lock:
        readers = _readers.get(name)
        if readers is None:
            readers = _readers[name] = []
            _create(name, readers, kind, unit, description)
        readers.append(read)

    def close() -> None:
        with _lock:
            if read in readers:
                readers.remove(read)

    return close


def _create(name: str, readers: list[Reader], kind: Kind, unit: str, description: str) -> None:
    def callback(options: CallbackOptions) -> Iterable[Observation]:
        with _lock:
            current = list(readers)
        out: list[Observation] = []
        for read in current:
            try:
                out.extend(Observation(value, dict(attrs)) for value, attrs in read())
            except Exception as e:
                log.debug("metric %s: reader failed: %r", name, e)
        return out

    meter = metrics.get_meter("drover")
    create = {
        "gauge": meter.create_observable_gauge,
        "counter": meter.create_observable_counter,
        "updown": meter.create_observable_up_down_counter,
    }[kind]
    create(name, callbacks=[callback], unit=unit, description=description)


def registered() -> list[str]:
    """Names of the observable instruments created in this process."""
    with _lock:
        return sorted(_readers)
