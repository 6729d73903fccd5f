"""Modelled time for shards that run at once: what each shard's time would be on AWS.

Two cores cannot serve 64 shards' requests in real time, and moto's server shares the process
(and its GIL) with them, so wall time would measure the emulator. Each shard instead keeps its
own clock (:class:`ShardClock`), which advances by

- the modelled round trip of each of its requests (bench/cost.py ``modelled_latency_ms``),
- the waits the runtime asks for (backoff after a conflict: the processor's ``sleep``), and
- its own CPU time (``time.thread_time`` of its thread: the consumer's code and botocore's),

and never by the emulator's CPU, a wait for the GIL or a wait for another shard's turn.

Requests reach moto in the order of their modelled send times (:class:`Scheduler`, a
conservative discrete-event order): a shard sends a request at modelled time *t* only once no
other shard can still send one before *t*. So what one request sees of another's effects, and
which transactions overlap (bench/conflicts.py), follows modelled time, not the emulator's speed.
A request takes effect when it is sent.
"""

from __future__ import annotations

import threading
import time


class Scheduler:
    """Lets the shards' requests through in modelled-time order (ties: the lower shard first).

    Each live shard has a *bound*: the modelled time before which it will send nothing (its
    clock at its last request, while it runs its own code; the time of the request it waits to
    send). A shard waiting to send at *t* goes when its (bound, shard) is the least of all.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bounds: dict[int, float] = {}
        self._waiting: dict[int, threading.Event] = {}

    def join(self, shard: int, at: float = 0.0) -> None:
        with self._lock:
            self._bounds[shard] = at

    def wait_turn(self, shard: int, at: float) -> None:
        """Block until no other shard can send before ``at``; the shard then runs, its bound
        held at ``at`` until it :meth:`advance` s."""
        event = threading.Event()
        with self._lock:
            self._bounds[shard] = at
            self._waiting[shard] = event
            self._release_least()
        event.wait()
        with self._lock:
            del self._waiting[shard]

    def advance(self, shard: int, at: float) -> None:
        """The shard's bound is now ``at`` (its clock after a request or a wait)."""
        with self._lock:
            self._bounds[shard] = at
            self._release_least()

    def leave(self, shard: int) -> None:
        """The shard sends nothing more."""
        with self._lock:
            self._bounds.pop(shard, None)
            self._release_least()

    def _release_least(self) -> None:
        if self._bounds:
            least = min(self._bounds, key=lambda s: (self._bounds[s], s))
            waiting = self._waiting.get(least)
            if waiting is not None:
                waiting.set()


class ShardClock:
    """One shard's modelled time, in seconds from the start of the run (module docstring).

    Its CPU time is that of the thread that called :meth:`start`; read from another thread,
    it charges none.
    """

    def __init__(self, shard: int, scheduler: Scheduler, epoch: float) -> None:
        self.shard = shard
        self.scheduler = scheduler
        self.epoch = epoch
        self.seconds = 0.0
        self.cpu_seconds = 0.0
        self.request_seconds = 0.0
        self.waited_seconds = 0.0
        self._cpu_mark: float | None = None
        self._thread: int | None = None
        scheduler.join(shard)

    def start(self) -> None:
        """From now on, the calling thread's CPU time is the shard's."""
        self._cpu_mark = time.thread_time()
        self._thread = threading.get_ident()

    def _charge_cpu(self) -> None:
        if self._cpu_mark is None:
            raise RuntimeError(f"shard {self.shard}'s clock was not started in its thread")
        if threading.get_ident() != self._thread:
            return
        now = time.thread_time()
        self.cpu_seconds += now - self._cpu_mark
        self.seconds += now - self._cpu_mark
        self._cpu_mark = now

    def now(self) -> float:
        """Modelled seconds so far, the CPU time since the last request included."""
        self._charge_cpu()
        return self.seconds

    def time(self) -> float:
        """Modelled epoch seconds (the processor's clock)."""
        return self.epoch + self.now()

    def before_request(self) -> float:
        """Wait for the shard's turn to send at its modelled now; returns that time."""
        self._charge_cpu()
        self.scheduler.wait_turn(self.shard, self.seconds)
        self._cpu_mark = time.thread_time()  # waking up is the scheduler's, not the shard's
        return self.seconds

    def after_request(self, round_trip_s: float) -> None:
        """The request's answer came after its modelled round trip."""
        self.seconds += round_trip_s
        self.request_seconds += round_trip_s
        self.scheduler.advance(self.shard, self.seconds)

    def sleep(self, seconds: float) -> None:
        """A wait the shard asked for (the processor's ``sleep``): modelled, not slept."""
        self._charge_cpu()
        self.seconds += max(0.0, seconds)
        self.waited_seconds += max(0.0, seconds)
        self.scheduler.advance(self.shard, self.seconds)

    def finish(self) -> None:
        """The shard is done; the others no longer wait for it."""
        if self._cpu_mark is not None:
            self._charge_cpu()
        self.scheduler.leave(self.shard)
