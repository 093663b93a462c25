"""The first attempts' circuit breaker (jobhooks.delivery.circuit_breaker)."""

from __future__ import annotations

import threading

from jobhooks.delivery.circuit_breaker import MAX_OPEN_CIRCUITS, CircuitBreaker


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_tripped_circuit_is_open_for_its_time_then_closes() -> None:
    clock = Clock()
    breaker = CircuitBreaker(60, monotonic=clock)

    breaker.trip("sub_a")

    assert breaker.is_open("sub_a") and not breaker.is_open("sub_b")
    clock.now += 59.9
    assert breaker.is_open("sub_a")
    clock.now += 0.1
    assert not breaker.is_open("sub_a")


def test_a_second_failure_opens_the_circuit_again_from_its_own_time() -> None:
    clock = Clock()
    breaker = CircuitBreaker(60, monotonic=clock)
    breaker.trip("sub_a")
    clock.now += 30
    breaker.trip("sub_a")
    clock.now += 45

    assert breaker.is_open("sub_a")


def test_the_open_circuits_a_process_remembers_are_bounded() -> None:
    clock = Clock()
    breaker = CircuitBreaker(60, monotonic=clock)
    for n in range(MAX_OPEN_CIRCUITS + 10):
        breaker.trip(f"sub_{n}")

    assert breaker.is_open(f"sub_{MAX_OPEN_CIRCUITS + 9}")
    assert not breaker.is_open("sub_0")  # the oldest went first


def test_trips_from_many_threads_are_all_kept() -> None:
    breaker = CircuitBreaker(60)
    threads = [
        threading.Thread(target=lambda n=n: [breaker.trip(f"sub_{n}_{k}") for k in range(50)])
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert all(breaker.is_open(f"sub_{n}_{k}") for n in range(8) for k in range(50))
