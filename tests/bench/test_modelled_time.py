"""bench/modelled_time.py: shards' requests go in modelled-time order, whatever the threads do."""

from __future__ import annotations

import threading
import time

import pytest

from bench.modelled_time import Scheduler, ShardClock


def _shard(clock: ShardClock, steps: list[float], sent: list[tuple[float, int]]) -> None:
    clock.start()
    try:
        for step in steps:
            clock.sleep(step)
            at = clock.before_request()
            sent.append((round(at, 3), clock.shard))
            clock.after_request(0.010)
    finally:
        clock.finish()


def test_requests_are_let_through_in_modelled_time_order() -> None:
    scheduler = Scheduler()
    sent: list[tuple[float, int]] = []
    # Shard 0 is slow in real time (it sleeps before starting) but early in modelled time.
    plans = {0: [0.0, 0.0, 0.0], 1: [0.015, 0.015], 2: [0.005, 0.050]}
    clocks = {shard: ShardClock(shard, scheduler, epoch=0.0) for shard in plans}

    def late_start() -> None:
        time.sleep(0.05)
        _shard(clocks[0], plans[0], sent)

    threads = [threading.Thread(target=late_start)] + [
        threading.Thread(target=_shard, args=(clocks[s], plans[s], sent)) for s in (1, 2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    assert [at for at, _ in sent] == sorted(at for at, _ in sent)
    assert sent[0][1] == 0  # modelled time 0, though its thread started last
    assert clocks[0].request_seconds == pytest.approx(0.030)
    assert clocks[2].waited_seconds == pytest.approx(0.055)
    # The modelled clock holds the round trips and the waits, plus the thread's own CPU only.
    assert 0.075 <= clocks[2].seconds < 0.075 + 0.05
