"""The shared delete rate without storage: AIMD on a fake clock, the deleter's queue and patience on a
fake store, and the driver's rate server with its executors' clients (and their fallback)."""

from __future__ import annotations

import logging
import socket
import threading
import time

import pytest

from lakefs_gc.storage import LocalStorage
from lakefs_gc.sweeping.deleter import RETRYABLE_CODES, THROTTLE_CODES, DeletePolicy, Deleter
from lakefs_gc.sweeping.rate_server import RateLease, RateServer
from lakefs_gc.sweeping.shared_rate import AdaptiveRate

FAST = dict(backoff_base=0.005, backoff_max=0.05)


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def _rate(ceiling, clock):
    return AdaptiveRate(ceiling, clock=clock, sleep=clock.sleep)


def test_throttle_codes_are_retryable_and_include_each_stores_slow_down():
    assert THROTTLE_CODES <= RETRYABLE_CODES
    assert {"SlowDown", "429", "503", "ServerBusy", "Throttling"} <= THROTTLE_CODES
    assert not {"InternalError", "500", "ConnectionError", "AccessDenied"} & THROTTLE_CODES


def test_deleters_sharing_the_rate_together_stay_at_the_ceiling():
    clock = FakeClock()
    rate = _rate(100, clock)
    for _ in range(25):  # four deleters taking turns, 10 keys each: 1,000 keys at 100/s
        for _ in range(4):
            rate.acquire(10)
    assert 9.9 <= clock.t - 100 <= 10.1


def test_a_burst_of_throttles_halves_the_rate_once_per_window_down_to_the_floor():
    clock = FakeClock()
    rate = _rate(1000, clock)
    for _ in range(20):  # twenty tasks throttled by the same burst
        rate.throttled()
    assert (rate.rate, rate.cuts, rate.throttles) == (500, 1, 20)
    clock.t += 0.5
    rate.throttled()
    assert rate.rate == 500  # still the same window
    clock.t += 0.6
    rate.throttled()
    assert rate.rate == 250
    for _ in range(20):
        clock.t += 1.0
        rate.throttled()
    assert rate.rate == 10  # the floor: a hundredth of the ceiling
    assert rate.figures().lowest == 10


def test_the_rate_climbs_back_additively_while_deletes_succeed_never_past_the_ceiling():
    clock = FakeClock()
    rate = _rate(1000, clock)
    rate.throttled()
    clock.t += 0.5
    rate.succeeded(10)
    assert rate.rate == 500  # no increase in the window of a cut
    for _ in range(4):  # a tenth of the ceiling per second of success
        clock.t += 1.0
        rate.succeeded(10)
    assert rate.rate == pytest.approx(900)
    for _ in range(5):
        clock.t += 1.0
        rate.succeeded(10)
    assert rate.rate == 1000
    assert rate.figures() == rate.figures().__class__(throttles=1, cuts=1, lowest=500, final=1000)
    assert next(r for _, r in rate.trace) == 1000
    assert min(r for _, r in rate.trace) == 500
    assert rate.trace[-1][1] == 1000


def test_one_step_of_increase_never_more_than_doubles_the_rate():
    clock = FakeClock()
    rate = _rate(1000, clock)
    for _ in range(8):
        clock.t += 1.0
        rate.throttled()
    assert rate.rate == 10
    clock.t += 60  # a long quiet wait (a batch at the floor), then one success
    rate.succeeded(1000)
    assert rate.rate == 20


def test_keys_booked_before_a_cut_are_paid_at_the_new_rate():
    clock = FakeClock()
    rate = _rate(100, clock)
    assert rate.lease(100) == pytest.approx(1.0)
    rate.throttled()  # 100 keys booked, not yet earned: they now take 2 s
    assert rate.lease(50) == pytest.approx(2.0 + 1.0)


def test_unlimited_rate_waits_for_nothing_until_throttled_then_halves_what_it_leased():
    clock = FakeClock()
    rate = _rate(0, clock)
    for _ in range(40):  # 1,000 keys/s for 4 s
        assert rate.lease(100) == 0.0
        clock.t += 0.1
    assert rate.figures().lowest is None
    rate.throttled()
    assert rate.rate == pytest.approx(500, rel=0.05)
    for _ in range(30):  # no ceiling: it climbs past what it measured
        clock.t += 1.0
        rate.succeeded(100)
    assert rate.rate > 1000
    assert rate.figures().lowest == pytest.approx(500, rel=0.05)


# --- the deleter's queue and patience, on a fake store -------------------------------------------


class Throttled(Exception):
    def __init__(self, code="SlowDown"):
        super().__init__(f"{code}: Please reduce your request rate.")
        self.response = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": 503}}


class Store:
    """Deletes into a set; the first ``throttle`` calls raise SlowDown, keys in ``key_throttle`` fail inside the answer once."""

    max_delete_batch = 1000

    def __init__(self, keys, throttle=0, key_throttle=(), always=False):
        self.keys = set(keys)
        self.throttle, self.always = throttle, always
        self.key_throttle = set(key_throttle)
        self.calls = 0

    def delete_batch(self, keys):
        self.calls += 1
        if self.always or self.calls <= self.throttle:
            raise Throttled()
        errors = []
        for k in keys:
            if k in self.key_throttle:
                self.key_throttle.discard(k)
                errors.append((k, "SlowDown", "reduce your request rate"))
            else:
                self.keys.discard(k)
        return errors


def test_throttled_batches_go_back_in_the_queue_without_using_up_attempts():
    clock = FakeClock()
    keys = [f"k{i:03d}" for i in range(100)]
    store = Store(keys, throttle=12, key_throttle=keys[40:45])
    rate = _rate(1000, clock)
    stats = Deleter(store, DeletePolicy(batch_size=10, max_attempts=1, **FAST), rate=rate, sleep=clock.sleep).delete(
        keys
    )
    assert store.keys == set()  # 12 throttled requests with one attempt allowed, and nothing dead
    assert (stats.deleted, stats.dead) == (100, [])
    assert stats.throttled == 13  # the 12 whole requests and the answer with throttled keys
    assert rate.cuts >= 1
    assert rate.rate < 1000


def test_keys_throttled_past_the_patience_are_dead_letters_with_their_code_and_why():
    clock = FakeClock()
    keys = [f"k{i:03d}" for i in range(30)]
    store = Store(keys, always=True)
    policy = DeletePolicy(batch_size=10, throttle_patience=60, **FAST)
    stats = Deleter(store, policy, rate=_rate(100, clock), sleep=clock.sleep, clock=clock).delete(keys)
    assert len(store.keys) == 30
    assert sorted(d.key for d in stats.dead) == keys
    assert {d.error_code for d in stats.dead} == {"SlowDown"}
    assert all("no delete succeeding for 60 s (the sweep's throttle patience)" in d.message for d in stats.dead)
    assert 60 <= clock.t - 100 <= 200  # it waited its patience, at the floor rate, not for ever


def test_the_deleter_before_the_shared_rate_counts_throttles_as_attempts():
    clock = FakeClock()
    keys = [f"k{i:03d}" for i in range(10)]
    store = Store(keys, always=True)
    policy = DeletePolicy(max_attempts=3, adaptive=False, **FAST)
    stats = Deleter(store, policy, sleep=clock.sleep, clock=clock).delete(keys)
    assert store.calls == 3
    assert {(d.error_code, d.attempts) for d in stats.dead} == {("SlowDown", 3)}


# --- the driver's server and its executors' clients ----------------------------------------------


def test_executors_lease_from_the_drivers_server_and_one_throttle_tells_them_all():
    shared = AdaptiveRate(400)
    with RateServer(shared, "127.0.0.1", fallback=200) as lease:
        assert lease.token not in repr(lease)
        a, b = lease.open(), lease.open()
        t = time.monotonic()
        threads = [threading.Thread(target=lambda r=r: [r.acquire(50) for _ in range(4)]) for r in (a, b)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(10)
        assert time.monotonic() - t >= 0.9  # 400 keys at 400/s between them (less a second of burst: none here)
        a.throttled()
        assert shared.rate == 200  # b's next lease is at the halved rate
        b.succeeded(50)
        b.acquire(1)
        assert (a.local, b.local) == (None, None)
    assert shared.figures().throttles == 1


def test_a_wrong_token_is_refused_and_the_client_falls_back_to_its_share(caplog):
    shared = AdaptiveRate(400)
    with RateServer(shared, "127.0.0.1", fallback=100) as lease:
        bad = RateLease(lease.url, "not-the-token", lease.fallback).open()
        with caplog.at_level(logging.WARNING):
            bad.acquire(10)
            bad.throttled()
    assert bad.local is not None
    assert bad.local.ceiling == 100
    assert shared.figures().throttles == 0  # the server counted nothing of it
    assert "cannot be reached" in caplog.text
    assert "at most 100 keys/s" in caplog.text
    assert "not-the-token" not in caplog.text


def test_a_sweep_whose_rate_server_is_unreachable_deletes_everything_at_its_share(tmp_path, caplog):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    st = LocalStorage(tmp_path)
    keys = [f"data/s/{i:03d}" for i in range(300)]
    for k in keys:
        st.put(k, b"x")
    rate = RateLease(f"http://127.0.0.1:{port}", "token", fallback=200).open()
    t = time.monotonic()
    with caplog.at_level(logging.WARNING):
        stats = Deleter(st, DeletePolicy(batch_size=50, **FAST), rate=rate).delete(keys)
    assert time.monotonic() - t >= 1.4  # 300 keys at the fallback's 200/s, never faster
    assert (stats.deleted, stats.dead) == (300, [])
    assert not [o.key for o in st.list("data/", recursive=True)]
    assert caplog.text.count("cannot be reached") == 1


def test_a_driver_that_cannot_listen_leaves_each_task_its_share(caplog):
    from lakefs_gc.sweeping.rate_server import OwnShare, serve

    with caplog.at_level(logging.WARNING), serve(AdaptiveRate(400), "203.0.113.7", fallback=100) as source:
        rate = source.open()  # 203.0.113.0/24 is no address of this host: bind fails
    assert source == OwnShare(100)
    assert rate.ceiling == 100
    assert "cannot serve the shared delete rate on 203.0.113.7" in caplog.text
