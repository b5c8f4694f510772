"""Never delete live data, over generated histories (tests/support/history.py).

Each history is built through lakefs-sdk on an emulator, three in four on a ``local://`` namespace
and the rest on an ``s3://`` one (a moto server: slower to write to), and ``CLOUD_HISTORIES`` more
each on an Azure Blob namespace (Azurite) and a ``gs://`` one (fake-gcs-server), collected by the real GC (every step, mark and
sweep, in one process on the shared SparkSession), and checked against an oracle computed only
from lakeFS's API and the generator's bookkeeping: zero "must keep" objects lost, every "must go"
object collected. A failing batch is bisected to one history, shrunk to a minimal list of
operations and printed with its seed.

    LAKEFS_GC_HISTORIES=1000 .venv/bin/python -m pytest tests/runs/test_random_histories.py -q -s  # more histories
"""

from __future__ import annotations

import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import lakefs_sdk
import pytest

from lakefs_gc.contract import RunSettings
from lakefs_gc.lakefs.client import LakeFSClient
from lakefs_gc.report import formats
from lakefs_gc.spark.runtime import ENV_LAKEFS_ACCESS_KEY, ENV_LAKEFS_SECRET_KEY
from lakefs_gc.steps.prepare_run import prepare_run
from lakefs_gc.storage import parse_namespace
from lakefs_gc.timestamps import parse_iso
from lakefs_sandbox.inprocess import run_steps
from tests.conftest import ns_storage
from tests.support import history

pytestmark = pytest.mark.spark
HISTORIES = int(os.environ.get("LAKEFS_GC_HISTORIES", "200"))
SEED_BASE = int(os.environ.get("LAKEFS_GC_HISTORY_SEED", "0"))
PER_RUN = 150  # at most this many histories share one repository, judged by one GC run (seconds each)
S3_SHARE = 0.25  # of the histories, built on an s3:// namespace
CLOUD_HISTORIES = int(os.environ.get("LAKEFS_GC_CLOUD_HISTORIES", "16"))  # more, on Azure and on GCS each
STEPS = 24
BUILDERS = 4  # histories of one repository built at once
# the run's cutoff is its start: everything the histories wrote is old enough (the grace period is
# the emulator's business; min age 0 with the override, as a test may)
SETTINGS = RunSettings(min_age_seconds=0, unsafe_min_age_override=True, confirm_after_seconds=0, max_delete_share=1.0)
# what the histories must have done, together (issue 16: the random histories of `make test`
# include these); copies and link-flow entries left staged on each namespace kind
EXPECTED = (
    "copy",
    "merge",
    "merge_squash",
    "merge_conflict_resolved",
    "revert",
    "revert_of_merge",
    "cherry_pick",
    "cherry_pick_of_merge",
    "tag",
    "tag_deleted",
    "branch_from_tag",
    "link_abandoned",
)
_repos = iter(range(10**9))


@dataclass
class Place:
    """Where histories are built: an emulator, and but for ``local://`` the server (moto, Azurite,
    fake-gcs-server) and the bucket or container."""

    emu: object
    store: object = None
    bucket: str = ""

    @property
    def kind(self) -> str:
        return self.emu.blockstore_type

    def storage(self, uri: str):
        return ns_storage(uri, self.store)

    def namespace(self, bucket: str, name: str) -> str:
        return f"s3://{bucket}/{name}" if self.kind == "s3" else self.store.namespace(self.store.create(bucket), name)

    def outside(self, name: str):
        """Where repository ``name``'s histories import from, outside its namespace (never collected):
        (a local directory or a URI, its storage or None for a directory)."""
        if self.store is None:
            return os.path.join(self.emu.local_root, "outside", name), None
        uri = self.namespace(f"{self.bucket}-outside", name)
        return uri, self.storage(uri)

    def collect(
        self,
        name: str,
        spark,
        work,
        now: datetime,
        settings: RunSettings = SETTINGS,
        run_id: str | None = None,
        between=None,
        keep=None,
    ):
        """One GC run of repository ``name``, every step in this process on ``spark``
        (``lakefs_sandbox.inprocess.run_steps``, ``between`` its hook); (context, results)."""
        emu = self.emu
        options = self.store.options() if self.store is not None else None
        secrets = {
            ENV_LAKEFS_ACCESS_KEY: emu.access_key,
            ENV_LAKEFS_SECRET_KEY: emu.secret_key,
            **(options.to_env() if options is not None else {}),
        }
        with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as gc_client:
            ctx = prepare_run(
                gc_client,
                name,
                settings,
                now=now,
                airflow_run_id=run_id or f"gc-{name}",
                work_dir=str(work),
                local_root=emu.local_root,
                parallelism=1,
                storage_options=options,
                keep=keep,
            )
            return ctx, run_steps(spark, ctx, gc_client, secrets, between=between)


def outside_exists(f: str, outside_storage) -> bool:
    """An object a history imported from outside the namespace (``History.outside``) is still there."""
    return outside_storage.exists(f.rsplit("/", 1)[1]) if outside_storage is not None else os.path.exists(f)


class Collected:
    """Histories built in one repository, collected by one GC run, and judged."""

    def __init__(
        self,
        place: Place,
        spark,
        work,
        seeds_and_steps: list[tuple[int, list[tuple]]],
        same_identity: bool | None = None,
    ):
        emu = place.emu
        client = emu.client()
        name = f"hist-{SEED_BASE}-{next(_repos)}"
        ns = emu.namespace(name, place.bucket)
        roots = parse_namespace(ns, emu.local_root).roots()
        history.create(client, name, ns)
        shared = len(seeds_and_steps) > 1
        outside, outside_storage = place.outside(name)
        storage = place.storage(ns)

        def build(seed_and_steps):  # each history on its own branches, with its own client
            seed, steps = seed_and_steps
            return history.apply(
                emu.client(),
                name,
                ns,
                roots,
                steps,
                prefix=f"h{seed}-" if shared else "",
                outside=outside,
                storage=storage,
                outside_storage=outside_storage,
                same_identity=same_identity,
                cherry_pick_any=not getattr(emu, "real", False),
            )

        # a few at a time: the client's work overlaps the emulator's (results keep the seeds' order)
        with ThreadPoolExecutor(BUILDERS) as pool:
            self.histories = list(pool.map(build, seeds_and_steps))
        history.set_rules(client, name, self.histories)
        # the clock a little ahead of the last write: with a minimum age of 0 the cutoff is the start
        now = datetime.now(UTC) + timedelta(seconds=2)
        self.keep, self.go = history.oracle(client, name, self.histories, roots, now.timestamp())
        # the full staged check judges the fast one: a mark of its own first (mark_only), then the
        # real run with the default check; both clean, with the same clock
        _, full = place.collect(
            name,
            spark,
            work,
            now,
            run_id=f"f-{name}",
            settings=replace(SETTINGS, mode="mark_only", staged_check="full", flow="clean"),
        )
        full_go = set(marked_for_deletion(storage, full["mark_uncommitted"].run_id))
        listed = {o.key: (o.size, int(o.last_modified * 1000)) for o in storage.list("data/", recursive=True)}
        before = set(listed)
        ctx, self.results = place.collect(
            name, spark, work, now, run_id=f"h-{name}", settings=replace(SETTINGS, flow="clean")
        )
        assert self.results["compute_candidates"].staged_check == "candidates"
        after = {o.key for o in storage.list("data/", recursive=True)}
        self.lost = self.keep - after
        self.lost |= {f for h in self.histories for f in h.outside if not outside_exists(f, outside_storage)}
        self.left = self.go & after
        # what the full check would have deleted and the fast one did not, and the other way round
        self.checks_differ = full_go ^ (before - after)
        self.storage, self.roots, self.after = storage, roots, after
        # where the bytes go (attribute_space): the run's space.json equals the API oracle, to the byte
        mark = self.results["mark_uncommitted"].run_id
        want = history.space_oracle(
            client,
            name,
            self.histories,
            roots,
            parse_iso(ctx.start_time).timestamp(),
            listed,
            set(marked_for_deletion(storage, mark)),
            int(parse_iso(ctx.cutoff_time).timestamp() * 1000),
        )
        got = dict(formats.read_space(storage, self.results["attribute_space"].space_key)["attribution"])
        got.pop("sharing")
        self.space_differs = {k: (got.get(k), want[k]) for k in want if got.get(k) != want[k]}

    @property
    def ok(self) -> bool:
        return not self.lost and not self.left and not self.checks_differ


def misexplained(c: Collected, per_fate: int = 3) -> list[str]:
    """``lakefs-gc explain`` (from the marks) on a few objects of each fate the oracle gave: a live
    object still there is "kept: ...", a garbage object the run deleted is "deleted"; the wrong ones."""
    from lakefs_gc.explain import COLLECTED, explain

    wrong = []
    fates = ((sorted(c.keep & c.after)[:per_fate], "kept"), (sorted(c.go - c.after)[:per_fate], COLLECTED))
    for addresses, want in fates:
        for a in addresses:
            ex = explain(c.storage, a, c.roots)
            if not ex.verdict.startswith(want):
                wrong.append("\n".join(ex.lines()))
    return wrong


def marked_for_deletion(storage, mark_id: str) -> list[str]:
    """The addresses a mark listed in its ``deleted/`` (what its sweep deletes)."""
    from lakefs_gc.report import formats, layout
    from lakefs_gc.report.marks import parquet_parts

    return [a for k in parquet_parts(storage, layout.deleted_dir(mark_id)) for a in formats.read_addresses(storage, k)]


def _shrink(run, steps: list[tuple], budget: int = 40) -> list[tuple]:
    """Drop operations one at a time while the failure persists (bounded)."""
    i = 0
    while i < len(steps) - 1 and budget > 0:
        candidate = steps[:i] + steps[i + 1 :]
        budget -= 1
        if not run(candidate).ok:
            steps = candidate
        else:
            i += 1
    return steps


def _one_failing(run, batch: list[tuple[int, list[tuple]]]) -> tuple[int, list[tuple]] | None:
    """A history of a failing batch that fails alone, by halving the batch (a GC run per half)."""
    while len(batch) > 1:
        half = batch[: len(batch) // 2]
        if not run(*half).ok:
            batch = half
        elif not run(*batch[len(batch) // 2 :]).ok:
            batch = batch[len(batch) // 2 :]
        else:
            return None  # only fails together
    return batch[0] if not run(*batch).ok else None


def _judge(place: Place, spark, work, seeds: list[int]) -> dict:
    """Build, collect and judge ``seeds`` on ``place`` in equal batches of at most PER_RUN (one
    repository and one GC run each); totals."""
    totals = {"objects": 0, "imported": 0, "keep": 0, "go": 0, "staged_linked": 0}

    def run(*seeds_and_steps):
        return Collected(place, spark, work, list(seeds_and_steps))

    runs = -(-len(seeds) // PER_RUN)
    for i in range(runs):  # batches of equal size
        part = seeds[i * len(seeds) // runs : (i + 1) * len(seeds) // runs]
        batch = [(seed, history.ops(seed, STEPS)) for seed in part]
        c = run(*batch)
        assert not c.space_differs, (
            f"{place.kind}: seeds {batch[0][0]}..{batch[-1][0]}: the run's space.json "
            f"differs from the API oracle (got, want): {c.space_differs}"
        )
        bad = misexplained(c)
        assert not bad, "lakefs-gc explain disagrees with the oracle:\n" + "\n".join(bad)
        totals["objects"] += sum(len(h.uploaded) for h in c.histories)
        totals["imported"] += sum(len(h.outside) for h in c.histories)
        totals["keep"] += len(c.keep)
        totals["go"] += len(c.go)
        totals["staged_linked"] += sum(h.staged_linked for h in c.histories)
        for h in c.histories:
            for k, v in h.done.items():
                totals[k] = totals.get(k, 0) + v
        if c.ok:
            continue
        failing = _one_failing(run, batch)
        if failing is None:
            pytest.fail(
                f"{place.kind}: seeds {batch[0][0]}..{batch[-1][0]} fail together, none alone: "
                f"lost {sorted(c.lost)}, left {sorted(c.left)}, the checks differ on {sorted(c.checks_differ)}"
            )
        seed, steps = failing
        small = _shrink(lambda s, seed=seed: run((seed, s)), steps)
        again = run((seed, small))
        pytest.fail(
            f"{place.kind} seed {seed}: lost {sorted(again.lost)}, left {sorted(again.left)}, the full and "
            f"fast staged checks differ on {sorted(again.checks_differ)}; "
            f"shrunk to {len(small)} operations:\n" + "\n".join(map(repr, small))
        )
    return totals


def test_random_histories_lose_nothing_live_and_collect_all_garbage(
    spark, lakefs_emulator, moto_server, azurite, fake_gcs, lakefs_emulator_factory, tmp_path, monkeypatch
):
    # the executors' path of compute_candidates and of its staged check here (a few candidates are
    # otherwise decided on the driver: the histories on lakeFS itself, tests/real_lakefs/test_histories.py,
    # take that one)
    from lakefs_gc import placement

    monkeypatch.setattr(placement, "DEFAULT", placement.Placement(driver_max_addresses=0, driver_check_max=0))
    seeds = list(range(SEED_BASE, SEED_BASE + HISTORIES))
    on_s3 = round(HISTORIES * S3_SHARE)
    local_seeds, s3_seeds = seeds[on_s3:], seeds[:on_s3]
    azure_seeds = list(range(seeds[-1] + 1, seeds[-1] + 1 + CLOUD_HISTORIES))
    gcs_seeds = [s + CLOUD_HISTORIES for s in azure_seeds]
    bucket = moto_server.create_bucket("histories")
    moto_server.create_bucket("histories-outside")
    s3_emu = lakefs_emulator_factory(s3=moto_server)
    places = (
        (Place(lakefs_emulator), local_seeds),
        (Place(s3_emu, moto_server, bucket), s3_seeds),
        (Place(lakefs_emulator_factory(cloud=azurite), azurite, "histories"), azure_seeds),
        (Place(lakefs_emulator_factory(cloud=fake_gcs), fake_gcs, "histories"), gcs_seeds),
    )

    def judge(place_and_seeds):
        place, part = place_and_seeds
        return _judge(place, spark, tmp_path / f"work-{place.kind}", part)

    # both namespace kinds at once: one builds (waiting on its emulator and S3) while the other's
    # GC runs (Spark jobs from two threads share the session)
    with ThreadPoolExecutor(len(places)) as pool:
        totals = list(pool.map(judge, places))
    lines, missing, done = [], [], {}
    for (place, part), t in zip(places, totals):
        lines.append(
            f"{len(part)} on {place.kind}://: {t['objects']} objects written, {t['imported']} imported from "
            f"outside the namespace, {t['keep']} must-keep and {t['go']} must-go checks; "
            f"{t['staged_linked']} link-flow entries left staged past the cutoff, "
            + ", ".join(f"{k} {t.get(k, 0)}" for k in ("link", *EXPECTED, "restage_same_identity"))
        )
        missing += [
            f"{k} on {place.kind}://"
            for k in ("copy", "staged_linked")
            if not t.get(k) and (k == "copy" or history.LINK_FLOW)
        ]
        for k, v in t.items():
            done[k] = done.get(k, 0) + v
    print(
        f"\n{HISTORIES + 2 * CLOUD_HISTORIES} histories: 0 live objects lost, 0 garbage left\n  " + "\n  ".join(lines)
    )
    if HISTORIES >= 200:  # what `make test`'s histories must include
        missing += [k for k in EXPECTED + ("restage_same_identity",) * history.SAME_IDENTITY if not done.get(k)]
        assert not missing, f"the histories never did {missing}"


def merged_history(server, name: str):
    """A local repository ``name`` whose main's HEAD is a merge commit, with branches b1..b3 around
    it (the cherry-pick quirk's scenario); (client, namespace, roots, history, merge commit id)."""
    client = server.client()
    ns = server.namespace(name)
    roots = parse_namespace(ns, server.local_root).roots()
    history.create(client, name, ns)
    steps = [
        ("upload", 0, 1),
        ("commit", 0, 1.0),
        ("branch", 0, 0),
        ("upload", 1, 2),
        ("commit", 1, 1.0),
        ("upload", 0, 3),
        ("commit", 0, 1.0),
        ("upload", 0, 4),  # main dirty: the merge commits it first
        ("merge", 0, 1, 0.4),
        ("branch", 0, 1),
        ("upload", 2, 5),
        ("commit", 2, 1.0),
    ]
    h = history.apply(client, name, ns, roots, steps, storage=ns_storage(ns))
    merge = client.branches_api.get_branch(name, "main").commit_id
    assert len(client.commits_api.get_commit(name, merge).parents) == 2
    return client, ns, roots, h, merge


def test_a_merge_commit_lakefs_answers_404_for_after_a_cherry_pick_never_deletes(spark, lakefs_emulator, tmp_path):
    """lakeFS 1.84 quirk: after a merge commit is cherry-picked, its full id can answer 404 until
    the server restarts (the cherry-pick mutates the cached commit; lakeFS's own GC crashes on it).
    Faults make the emulator answer so for every request naming that id; the GC must fail closed
    or succeed, and nothing live may be lost."""
    import lakefs_sdk

    emu = lakefs_emulator
    name = f"quirk-{next(_repos)}"
    client, ns, roots, h, merge = merged_history(emu, name)
    client.branches_api.cherry_pick(name, "b3", lakefs_sdk.CherryPickCreation(ref=merge, parent_number=1))
    client.objects_api.upload_object(name, "b1", "obj/garbage.bin", content=b"staged, then reset")
    client.branches_api.reset_branch(name, "b1", lakefs_sdk.ResetCreation(type="reset"))
    history.set_rules(client, name, [h])
    now = datetime.now(UTC) + timedelta(seconds=2)
    keep, _ = history.oracle(client, name, [h], roots, now.timestamp())
    before = {o.key for o in ns_storage(ns).list("data/", recursive=True)}
    emu.set_faults({"method": "*", "path": merge, "times": -1, "status": 404, "body": {"message": "commit not found"}})
    try:
        with LakeFSClient(emu.api_url, emu.access_key, emu.secret_key) as gc_client:
            ctx = prepare_run(
                gc_client,
                name,
                SETTINGS,
                now=now,
                airflow_run_id=f"q-{name}",
                work_dir=str(tmp_path / "work"),
                local_root=emu.local_root,
                parallelism=1,
            )
            env = {ENV_LAKEFS_ACCESS_KEY: emu.access_key, ENV_LAKEFS_SECRET_KEY: emu.secret_key}
            try:
                run_steps(spark, ctx, gc_client, env)
                failed = None
            except Exception as exc:
                failed = exc
        fired = sum(r["fired"] for r in emu.faults())
    finally:
        emu.set_faults()
    after = {o.key for o in ns_storage(ns).list("data/", recursive=True)}
    assert fired, "the GC never asked for the merge commit: the quirk was not exercised"
    assert keep <= after, f"live objects lost: {sorted(keep - after)}"
    if failed is not None:
        assert after == before, "the GC failed but deleted first"
        assert merge in str(failed) or "404" in str(failed), failed
    outcome = f"failed closed: {type(failed).__name__} {' '.join(str(failed).split())[:200]}" if failed else "succeeded"
    print(f"\nthe GC {outcome} ({fired} answers of 404 for the merge commit)")


@pytest.mark.parametrize("how", ["copy onto itself", "same bytes uploaded again"])
@pytest.mark.parametrize("kind", ["local", "s3"])
def test_an_object_staged_again_with_its_committed_identity_survives(
    kind, how, spark, lakefs_emulator, moto_server, lakefs_emulator_factory, tmp_path
):
    """lakeFS's entry identity leaves the address out, and its uncommitted diff (the uncommitted
    mark, diffBranch) skips a staged entry whose identity equals the committed one: a committed
    object copied onto its own path, or its bytes uploaded again, is staged at a new address that
    reads return and no mark of lakeFS lists. Left staged past the cutoff, it must survive."""
    if kind == "local":
        place = Place(lakefs_emulator)
    else:
        bucket = moto_server.create_bucket(f"restage-{uuid.uuid4().hex[:8]}")
        place = Place(lakefs_emulator_factory(s3=moto_server), moto_server, bucket)
    steps = [
        ("upload", 0, 1),
        ("upload", 0, 2),
        ("commit", 0, 1.0),
        ("restage", 0, 1, 0.1 if how == "copy onto itself" else 0.9),
    ]
    c = Collected(place, spark, tmp_path / "work", [(0, steps)], same_identity=True)
    assert c.histories[0].done.get("restage_same_identity") == 1
    assert not c.lost, f"lost {sorted(c.lost)}"
    assert not c.left, f"left {sorted(c.left)}"


# ---------------------------------------------------------------------------------------------
# several GC runs in a row, incremental and clean (issue 18)

RUN_FLOWS = ("clean", "incremental", "incremental", "clean", "incremental", "incremental", "clean")
SEQUENCES = int(os.environ.get("LAKEFS_GC_SEQUENCES", "1"))


def _churn(client, repo: str, roots: tuple[str, ...], rng, churn: history.History) -> None:
    """Between two runs, on every branch at random: stage a new object, commit what is staged,
    reset the branch (its staged entries become garbage), or delete an object (a staged delete).
    New addresses go into ``churn.uploaded``, committed ones into ``churn.committed_ever``."""
    for b in [b.id for b in client.branches_api.list_branches(repo, amount=1000).results]:
        r = rng.random()
        try:
            if r < 0.35:
                stats = client.objects_api.upload_object(repo, b, f"churn/{rng.randrange(12)}", content=os.urandom(8))
                churn.uploaded.add(history._rel(roots, stats.physical_address))
            elif r < 0.55:
                c = client.commits_api.commit(repo, b, lakefs_sdk.CommitCreation(message="churn"))
                churn.committed_ever |= history._list_addresses(client, repo, c.id, roots, {})
            elif r < 0.7:
                client.branches_api.reset_branch(repo, b, lakefs_sdk.ResetCreation(type="reset"))
            elif r < 0.85:
                page = client.objects_api.list_objects(repo, b, amount=50).results
                if page:
                    client.objects_api.delete_object(repo, b, rng.choice(page).path)
        except lakefs_sdk.exceptions.ApiException as e:
            if e.status not in (400, 404):  # no changes to commit, nothing to delete
                raise


def test_runs_in_a_row_incremental_and_clean_lose_nothing_and_end_as_clean_runs_would(
    spark, lakefs_emulator_factory, tmp_path
):
    """Several GC runs in a row on one repository, mixing incremental and clean runs, with new
    histories, new slices and churn between runs (staged entries later committed, reset or deleted):
    no run deletes a live object, and after every clean run no garbage is left, as if only clean
    runs had happened. A slice rolls over every second, so every run sees new and old slices."""
    totals = runs_in_a_row(Place(lakefs_emulator_factory("--slice-interval", "1")), spark, tmp_path)
    assert totals["slices_not_listed"] > 0, "the incremental runs listed every slice"


def runs_in_a_row(place: Place, spark, tmp_path) -> dict:
    """``SEQUENCES`` sequences of ``RUN_FLOWS`` GC runs on ``place`` (an emulator or lakeFS itself,
    on any blockstore), each judged; the totals."""
    import random

    emu = place.emu
    totals = {"incremental_deleted": 0, "incremental_runs": 0, "carried": 0, "slices_not_listed": 0}
    for seq in range(SEQUENCES):
        rng = random.Random(SEED_BASE * 1000 + seq)
        client = emu.client()
        name = f"runs-{SEED_BASE}-{seq}-{next(_repos)}"
        ns = emu.namespace(name, place.bucket)
        roots = parse_namespace(ns, emu.local_root).roots()
        history.create(client, name, ns)
        storage = place.storage(ns)
        outside, outside_storage = place.outside(name)
        histories: list[history.History] = []
        churn = history.History(name, ns, [])
        for i, flow in enumerate(RUN_FLOWS):
            seed = SEED_BASE * 1000 + seq * 100 + i
            client = emu.client()  # a new connection pool: the emulator drops connections idle during a run
            histories.append(
                history.apply(
                    client,
                    name,
                    ns,
                    roots,
                    history.ops(seed, 12),
                    prefix=f"r{i}-",
                    outside=outside,
                    storage=storage,
                    outside_storage=outside_storage,
                    cherry_pick_any=not getattr(emu, "real", False),
                )
            )
            if i:
                _churn(client, name, roots, rng, churn)
            history.set_rules(client, name, histories)
            time.sleep(1.1)  # what was written falls in slices older than the next ones
            now = datetime.now(UTC) + timedelta(seconds=2)
            keep, go = history.oracle(client, name, [*histories, churn], roots, now.timestamp())
            before = {o.key for o in storage.list("data/", recursive=True)}
            ctx, results = place.collect(
                name, spark, tmp_path / "work", now, replace(SETTINGS, flow=flow), run_id=f"r{i}-{name}"
            )
            after = {o.key for o in storage.list("data/", recursive=True)}
            where = f"{place.kind}: sequence {seq} (seed base {SEED_BASE}), run {i} ({flow})"
            assert ctx.flow == flow, (where, ctx.flow_reason)
            assert keep <= after, f"{where}: live objects lost: {sorted(keep - after)}"
            assert not (before - after) - set().union(*(h.uploaded for h in [*histories, churn])), where
            assert all(outside_exists(f, outside_storage) for h in histories for f in h.outside), where
            if flow == "clean":
                assert not go & after, f"{where}: garbage left after a clean run: {sorted(go & after)}"
            else:
                totals["incremental_runs"] += 1
                totals["incremental_deleted"] += len(before - after)
                totals["carried"] += results["compute_candidates"].carried_candidates
                totals["slices_not_listed"] += results["list_slices"].slices_before_base
    print(
        f"\n{place.kind}: {SEQUENCES} sequences of {len(RUN_FLOWS)} runs: 0 live objects lost; "
        f"{totals['incremental_runs']} incremental runs deleted {totals['incremental_deleted']} objects "
        f"({totals['carried']} of them carried from the run before: staged then, garbage now), leaving "
        f"{totals['slices_not_listed']} old slices unlisted"
    )
    assert totals["incremental_deleted"] > 0, "the incremental runs never collected anything"
    return totals
