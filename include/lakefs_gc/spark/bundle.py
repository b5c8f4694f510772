"""
Where the Spark jobs are, and the ``--py-files`` zip of this package, for an installed package as for a checkout.

- :func:`job_path` / :func:`jobs_dir`: the one entry point ships inside the package
  (``lakefs_gc/jobs/gc_step.py``, the step its first argument), so spark-submit finds it wherever
  ``lakefs_gc`` is installed.
- :func:`py_files`: a zip of the ``lakefs_gc`` package that is imported (an installed wheel or
  the checkout's ``include/``), for ``spark-submit --py-files`` (executors on a cluster import the
  package from it). Built on first use and cached, named by the version and a digest of every
  file's bytes: a changed or upgraded package gets a new zip, an unchanged one is reused. The
  cache is ``$LAKEFS_GC_CACHE_DIR``, else ``<tmp>/lakefs-gc-<uid>``, a directory only this user
  may write (a zip another user could replace would run their code in the jobs).

``python -m lakefs_gc.spark.bundle OUT.zip`` writes the same zip to ``OUT.zip`` (``scripts/setup.sh``
builds ``build/lakefs_gc.zip`` with it), rewriting it only when its content changed.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

from lakefs_gc.contract import SPARK_STEPS

ENV_CACHE_DIR = "LAKEFS_GC_CACHE_DIR"
STEPS = SPARK_STEPS  # the steps the job runs
JOB = "gc_step.py"  # the entry point of every Spark step


def package_dir() -> Path:
    """Return the directory of the imported ``lakefs_gc`` package."""
    import lakefs_gc

    return Path(lakefs_gc.__file__).resolve().parent


def jobs_dir() -> Path:
    """Return the directory of the jobs' entry points (``lakefs_gc/jobs``)."""
    return Path(__file__).resolve().parents[1] / "jobs"


def job_path() -> Path:
    """Return the entry point of the Spark steps, ``.../lakefs_gc/jobs/gc_step.py``."""
    return jobs_dir() / JOB


def job_args(step: str) -> list[str]:
    """Return the entry point's first arguments for ``step``: a ValueError names the Spark steps when it is none."""
    if step not in STEPS:
        raise ValueError(f"no Spark job for step {step!r}: the Spark steps are {', '.join(STEPS)}")
    return [step]


def _package_files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    )


def _digest(root: Path, files: list[Path]) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _write_zip(root: Path, files: list[Path], out: Path) -> None:
    """Write the zip next to ``out`` and move it into place (readers never see half a zip)."""
    fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for p in files:
                z.write(p, (Path(root.name) / p.relative_to(root)).as_posix())
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cache_dir() -> Path:
    """
    Return the zip cache: ``$LAKEFS_GC_CACHE_DIR``, else ``<tmp>/lakefs-gc-<uid>``.

    Created with mode 0700 and refused when another user owns it or others may write to it.
    """
    configured = os.environ.get(ENV_CACHE_DIR)
    d = Path(configured) if configured else Path(tempfile.gettempdir()) / f"lakefs-gc-{os.getuid()}"
    return private_dir(d, "the --py-files cache", ENV_CACHE_DIR)


def private_dir(d: Path, what: str, env: str) -> Path:
    """
    Return ``d``, created with mode 0700.

    Refused when another user owns it or others may write to it (what is cached there runs as code
    in the jobs).
    """
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = d.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise RuntimeError(
            f"{what} {d} is not a directory owned by this user (uid {os.getuid()}) "
            f"and writable by it alone: remove it, or set {env} to a private directory"
        )
    return d


def py_files(cache: Path | None = None) -> Path:
    """Return the ``--py-files`` zip of the imported ``lakefs_gc`` package, built once per content."""
    from lakefs_gc import __version__

    root = package_dir()
    files = _package_files(root)
    out = (cache or cache_dir()) / f"lakefs_gc-{__version__}-{_digest(root, files)[:16]}.zip"
    if not out.is_file():
        _write_zip(root, files, out)
    return out


def write_py_files(out: Path) -> bool:
    """Write the package's zip to ``out`` unless an identical one is there; True when written."""
    root = package_dir()
    files = _package_files(root)
    digest = _digest(root, files)
    stamp = out.with_name(out.name + ".sha")
    if out.is_file() and stamp.is_file() and stamp.read_text() == digest:
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    _write_zip(root, files, out)
    stamp.write_text(digest)
    return True


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m lakefs_gc.spark.bundle OUT.zip", file=sys.stderr)
        return 2
    out = Path(args[0])
    print(f"{out}: {'written' if write_py_files(out) else 'up to date'} (lakefs_gc from {package_dir()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
