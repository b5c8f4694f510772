"""Runs from an inventory, over random histories (tests/support/history.py), on every store that has one.

For each store (S3 on moto, Azure Blob on Azurite, GCS on fake-gcs-server) the emulator builds
``LAKEFS_GC_INVENTORY_HISTORIES`` (16) random histories in one repository, pausing each at a random step of its
own. With every history paused, the store's inventory is taken (T_inv) in its provider's layout, CSV
or Parquet (tests/inventory/builders.py, from a listing of the bucket at T_inv); then the histories
run on to their end. Then, on the same state and with the same clock, a
LIST-based run (mark only) and a run from the inventory (mark and sweep). The property:

- the run from the inventory marks exactly what the LIST-based run marks, minus the objects written
  after T_inv into a slice that held objects at T_inv (absent from the inventory, deferred); the
  objects written after T_inv into a slice created after it are marked by both (the top-up lists
  them);
- its sweep deletes exactly what it marks, and every object the oracle says to keep (each live
  branch, staged or committed, and the retained commits) is still in storage and reads back;
- it leaves no garbage but the deferred objects.

The expected difference is computed from the inventory's own rows and a listing after the
histories end, not from the GC's code. The emulator rolls its slices every ``SLICE_SIZE`` addresses,
so that the writes after T_inv fill the slice of T_inv first (deferred) and then new slices (the
top-up). The margin that hands a slice created less than 10 minutes before T_inv to LIST is 0
here (the histories take seconds), and the histories wait a second after T_inv, so that a slice
created after it has a later second in its id.

    LAKEFS_GC_INVENTORY_HISTORIES=50 .venv/bin/python -m pytest tests/runs/test_inventory_histories.py -q -s
    LAKEFS_GC_INVENTORY_KINDS=azure,gs ...  # some stores only
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest

from lakefs_gc.listing import inventory as inventory_listing
from lakefs_gc.storage import ObjectNotFound, Storage, open_storage, parse_namespace
from tests.inventory.builders import azure_inventory_of, gcs_inventory_of, s3_inventory_of
from tests.runs.test_random_histories import SETTINGS, STEPS, Place, marked_for_deletion, outside_exists
from tests.support import history

pytestmark = pytest.mark.spark
HISTORIES = int(os.environ.get("LAKEFS_GC_INVENTORY_HISTORIES", "16"))  # per store
SEED_BASE = int(os.environ.get("LAKEFS_GC_HISTORY_SEED", "0")) + 70_000  # other seeds than the rest
KINDS = tuple(os.environ.get("LAKEFS_GC_INVENTORY_KINDS", "s3,azure,gs").split(","))
PER_RUN = 40  # at most this many histories share one repository and one pair of runs
SLICE_SIZE = 32  # the emulator's slice roll-over by count
STORES = {"s3": "moto_server", "azure": "azurite", "gs": "fake_gcs"}
PAUSE_TIMEOUT = 300  # seconds a builder or the inventory waits for the others


class Paused(list):
    """
    A history's steps that stop before step ``at`` (or after the last) until ``pause()`` returns.

    ``history.apply`` applies its steps as it walks them: the pause comes between two of them, never
    inside one (a link-flow write and its link are one step), and only the first walk pauses.
    """

    def __init__(self, steps: list[tuple], at: int, pause: Callable[[], None]):
        super().__init__(steps)
        self.at, self.pause, self.paused = at, pause, False

    def __iter__(self) -> Iterator[tuple]:
        for i, step in enumerate(super().__iter__()):
            if i == self.at:
                self._pause()
            yield step
        self._pause()

    def _pause(self) -> None:
        if not self.paused:
            self.paused = True
            self.pause()


@dataclass
class Store:
    """Where a store's inventories are delivered, and how one is written (its provider's layout)."""

    place: Place
    dest: Storage  # the destination bucket or container's root
    source: Storage  # the source bucket or container's root (the histories' namespaces are in it)

    @property
    def kind(self) -> str:
        return self.place.kind

    def root(self, bucket: str) -> str:
        return root_of(self.place, bucket)

    def write(self, config: str, taken: datetime, objects: list, file_format: str) -> dict[str, str]:
        """Write configuration ``config``'s inventory of ``objects``, taken at ``taken``; the run's settings to read it."""
        bucket, dest = self.place.bucket, self.dest
        if self.kind == "s3":
            prefix = f"reports/{bucket}/{config}"
            s3_inventory_of(self.source, bucket, dest, taken, prefix, objects=objects, file_format=file_format)
            location, name = f"{self.root(dest_bucket(bucket))}/{prefix}", ""
        elif self.kind == "azure":
            azure_inventory_of(
                self.source,
                bucket,
                self.place.store.account_url,
                dest,
                taken,
                objects=objects,
                file_format=file_format,
                rule=config,
            )
            location, name = self.root(dest_bucket(bucket)), config
        else:
            path = f"reports/{config}"
            gcs_inventory_of(
                self.source, bucket, dest, taken, path, objects=objects, file_format=file_format, config_id=config
            )
            location, name = f"{self.root(dest_bucket(bucket))}/{path}", config
        return {
            "listing_source": "inventory",
            "inventory_location": location,
            "inventory_name": name,
            "inventory_source_prefix": "",
        }


def dest_bucket(bucket: str) -> str:
    return f"{bucket}-inventories"


def root_of(place: Place, bucket: str) -> str:
    """The URI of bucket or container ``bucket``'s root on ``place``'s store."""
    return f"s3://{bucket}" if place.kind == "s3" else place.store.namespace(bucket, "")


def store_on(place: Place) -> Store:
    """A :class:`Store` for ``place`` (its bucket, the outside one and the destination created)."""
    for bucket in (place.bucket, f"{place.bucket}-outside", dest_bucket(place.bucket)):
        if place.kind == "s3":
            place.store.create_bucket(bucket)
        else:
            place.store.create(bucket)
    options = place.store.options()
    return Store(
        place,
        open_storage(root_of(place, dest_bucket(place.bucket)), options),
        open_storage(root_of(place, place.bucket), options),
    )


@dataclass
class Built:
    """A repository's histories, built with an inventory taken while each was paused."""

    name: str
    ns: str
    roots: tuple[str, ...]
    histories: list[history.History]
    at: list[int]  # each history's pause (the index of the step it paused before)
    objects: list  # the bucket at T_inv: the inventory's rows
    settings: dict[str, str]  # the run's settings to read the inventory
    file_format: str
    outside_storage: object


@dataclass
class Judged:
    """What one repository's histories, inventory and two runs gave."""

    histories: int = 0
    at: list[int] = field(default_factory=list)  # each history's pause (its step)
    file_format: str = ""
    where: str = ""
    rows: int = 0  # the inventory's rows
    marked_by_list: int = 0
    marked: int = 0
    deferred: int = 0  # written after T_inv into a slice of T_inv: kept for a later run
    deferred_garbage: int = 0  # of them, marked by the LIST-based run: what the two runs' marks differ by
    topped_up: int = 0  # written after T_inv into a slice created after it: listed by LIST
    topped_up_garbage: int = 0  # of them, marked by both runs
    keep: int = 0
    problems: list[str] = field(default_factory=list)


def build(store: Store, seeds: list[int], rng: random.Random, file_format: str) -> Built:
    """
    Build ``seeds``' histories in one repository, each paused at a random step while the inventory is taken.

    Every history runs in a thread of its own until its pause (``rng`` picks it); with all of them
    paused, T_inv is now and the bucket's listing is the inventory, in ``file_format``; a second
    later they all run on to their end.
    """
    place = store.place
    emu = place.emu
    client = emu.client()
    name = f"invh-{seeds[0]}-{uuid.uuid4().hex[:6]}"
    ns = emu.namespace(name, place.bucket)
    roots = parse_namespace(ns).roots()
    history.create(client, name, ns)
    storage = place.storage(ns)
    outside, outside_storage = place.outside(name)
    plans = [(seed, history.ops(seed, STEPS)) for seed in seeds]
    at = [rng.randint(0, len(steps)) for _, steps in plans]
    arrived, released = threading.Barrier(len(plans) + 1), threading.Barrier(len(plans) + 1)

    def pause() -> None:
        arrived.wait(PAUSE_TIMEOUT)
        released.wait(PAUSE_TIMEOUT)

    def one(i: int) -> history.History:
        seed, steps = plans[i]
        try:
            return history.apply(
                emu.client(),
                name,
                ns,
                roots,
                Paused(steps, at[i], pause),
                prefix=f"h{seed}-",
                outside=outside,
                storage=storage,
                outside_storage=outside_storage,
                cherry_pick_any=not getattr(emu, "real", False),
            )
        except BaseException:
            arrived.abort()
            released.abort()
            raise

    with ThreadPoolExecutor(len(plans)) as pool:
        built = [pool.submit(one, i) for i in range(len(plans))]
        try:
            arrived.wait(PAUSE_TIMEOUT)  # every history paused: T_inv
        except threading.BrokenBarrierError:
            [b.result() for b in built]  # a builder's own error
            raise
        t_inv = datetime.now(UTC)
        objects = list(store.source.list("", recursive=True))
        settings = store.write(name, t_inv, objects, file_format)
        time.sleep(1.05)  # a slice created from now on has a later second in its id than T_inv
        released.wait(PAUSE_TIMEOUT)
        histories = [b.result() for b in built]
    history.set_rules(client, name, histories)
    return Built(name, ns, roots, histories, at, objects, settings, file_format, outside_storage)


def judge(
    store: Store, spark, work, seeds: list[int], rng: random.Random, file_format: str, on_executors: bool
) -> Judged:
    """Build ``seeds``' histories (:func:`build`); run by LIST (mark only) and from the inventory; judge."""
    place = store.place
    b = build(store, seeds, rng, file_format)
    now = datetime.now(UTC) + timedelta(seconds=2)
    keep, go = history.oracle(place.emu.client(), b.name, b.histories, b.roots, now.timestamp())
    storage = place.storage(b.ns)
    ns_prefix = parse_namespace(b.ns).prefix.strip("/") + "/"
    at_inv = {o.key[len(ns_prefix) :] for o in b.objects if o.key.startswith(ns_prefix + "data/")}
    before = {o.key for o in storage.list("data/", recursive=True)}
    later = before - at_inv
    deferred = {a for a in later if _slice(a) in {_slice(o) for o in at_inv}}
    work_dir = work / b.name
    _, by_list = place.collect(
        b.name, None, work_dir, now, replace(SETTINGS, mode="mark_only", flow="clean"), run_id=f"l-{b.name}"
    )
    listed = set(marked_for_deletion(storage, by_list["mark_uncommitted"].run_id))
    settings = replace(SETTINGS, flow="clean", **b.settings)
    _, from_inv = place.collect(b.name, spark if on_executors else None, work_dir, now, settings, f"i-{b.name}")
    marked = set(marked_for_deletion(storage, from_inv["mark_uncommitted"].run_id))
    after = {o.key for o in storage.list("data/", recursive=True)}

    j = Judged(len(seeds), b.at, b.file_format, "executors" if on_executors else "task", len(b.objects))
    j.marked_by_list, j.marked, j.keep = len(listed), len(marked), len(keep)
    j.deferred, j.deferred_garbage = len(deferred), len(listed & deferred)
    j.topped_up, j.topped_up_garbage = len(later - deferred), len(listed & (later - deferred))
    where = f"{place.kind}: seeds {seeds[0]}..{seeds[-1]} paused at steps {b.at} ({b.file_format}, {j.where})"
    sl = from_inv["list_slices"]
    if sl.listing_source != "inventory":
        j.problems.append(f"{where}: listed by {sl.listing_source} ({sl.listing_fallback})")
    if sl.inventory_rows != len(b.objects):
        j.problems.append(f"{where}: {sl.inventory_rows} rows read, the inventory has {len(b.objects)}")
    _differ(j, where, "marked by the inventory run, not by listing minus the deferred", marked - (listed - deferred))
    _differ(j, where, "marked by listing and not deferred, not by the inventory run", (listed - deferred) - marked)
    _differ(j, where, "deleted, not marked", (before - after) - marked)
    _differ(j, where, "marked, not deleted", (marked & before) - (before - after))
    _differ(j, where, "live and lost", keep - after)
    _differ(j, where, "garbage left, not deferred", (go & after) - deferred)
    _differ(j, where, "live and unreadable", {a for a in keep & after if not _reads(storage, a)})
    lost = {f for h in b.histories for f in h.outside if not outside_exists(f, b.outside_storage)}
    _differ(j, where, "imported from outside and lost", lost)
    return j


def _slice(address: str) -> str:
    """The slice of ``data/<slice>/<object>`` ("" for an object loose under ``data/``)."""
    parts = address.split("/")
    return parts[1] if len(parts) == 3 else ""


def _reads(storage, address: str) -> bool:
    try:
        storage.get(address)
    except ObjectNotFound:
        return False
    return True


def _differ(j: Judged, where: str, what: str, addresses: set[str]) -> None:
    if addresses:
        j.problems.append(f"{where}: {len(addresses)} {what}: {sorted(addresses)[:10]}")


def judge_stores(
    stores: list[Store], spark, tmp_path, histories: int, seed_base: int = SEED_BASE
) -> list[list[Judged]]:
    """
    Judge ``histories`` per store (batches of at most PER_RUN), the stores side by side; each store's batches.

    The inventory's format and where the run from it reads it alternate from batch to batch, from
    store to store, and between the emulator's seeds and lakeFS's (``seed_base``): CSV on Spark's
    executors, Parquet in the task's own process (tests/steps/test_list_from_inventory.py has
    the other two pairs).
    """

    def one(i_store: tuple[int, Store]) -> list[Judged]:
        i, store = i_store
        seeds = list(range(seed_base + i * histories, seed_base + (i + 1) * histories))
        runs = -(-len(seeds) // PER_RUN)
        out = []
        for r in range(runs):
            part = seeds[r * len(seeds) // runs : (r + 1) * len(seeds) // runs]
            rng = random.Random(f"{seed_base}-{store.kind}-{r}")
            csv = (i + r + seed_base // 10_000) % 2 == 0
            work = tmp_path / f"work-{store.kind}"
            out.append(judge(store, spark, work, part, rng, "CSV" if csv else "Parquet", on_executors=csv))
        return out

    with ThreadPoolExecutor(len(stores)) as pool:  # one builds while another's GC runs
        return list(pool.map(one, enumerate(stores)))


def report(stores: list[Store], judged: list[list[Judged]], what: str) -> None:
    """Print each store's totals, and fail with every problem found."""
    lines, problems = [], []
    for store, js in zip(stores, judged):
        keys = ("histories", "rows", "marked_by_list", "marked", "deferred", "deferred_garbage", "topped_up", "keep")
        keys += ("topped_up_garbage",)
        t = {k: sum(getattr(j, k) for j in js) for k in keys}
        formats = ", ".join(f"{j.file_format} ({j.where})" for j in js)
        lines.append(
            f"{t['histories']} on {store.kind} ({formats}): {t['rows']} inventory rows; {t['marked_by_list']} "
            f"marked by LIST, {t['marked']} from the inventory; written after T_inv: {t['deferred']} deferred "
            f"({t['deferred_garbage']} of them garbage), {t['topped_up']} in slices listed by LIST "
            f"({t['topped_up_garbage']} garbage); {t['keep']} live"
        )
        problems += [p for j in js for p in j.problems]
    print(f"\nruns from an inventory, {what}:\n  " + "\n  ".join(lines))
    again = (
        f"again: LAKEFS_GC_HISTORY_SEED={SEED_BASE - 70_000} LAKEFS_GC_INVENTORY_KINDS={','.join(KINDS)} "
        "and the same count of histories (the slices' roll-overs may differ)"
    )
    assert not problems, "\n".join([*problems, again])


def test_runs_from_an_inventory_on_random_histories_delete_what_listing_deletes_but_the_newer(
    request, spark, lakefs_emulator_factory, tmp_path, monkeypatch
):
    monkeypatch.setattr(inventory_listing, "TOP_UP_MARGIN", timedelta(0))
    stores = []
    for kind in KINDS:
        server = request.getfixturevalue(STORES[kind])
        on = {"s3": server} if kind == "s3" else {"cloud": server}
        emu = lakefs_emulator_factory("--slice-size", str(SLICE_SIZE), **on)
        stores.append(store_on(Place(emu, server, f"inv-histories-{kind}")))
    judged = judge_stores(stores, spark, tmp_path, HISTORIES)
    report(stores, judged, "on the emulator")
    if HISTORIES >= 16:  # which objects fill the slice of T_inv is the threads' race: many make both likely
        done = [j for js in judged for j in js]
        assert sum(j.deferred_garbage for j in done), "no garbage was written into a slice of T_inv after it"
        assert sum(j.topped_up_garbage for j in done), "no garbage was written into a slice created after T_inv"
