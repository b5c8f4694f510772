"""lakefs_gc.spark.bundle: the jobs inside the package and the --py-files zip of the package."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from lakefs_gc.spark import bundle


def test_every_spark_step_has_the_one_entry_point_inside_the_package():
    path = bundle.job_path()
    assert path.is_file()
    assert path.parent == bundle.package_dir() / "jobs"
    assert sorted(p.name for p in path.parent.glob("*.py")) == ["__init__.py", "gc_step.py"]
    assert "main(sys.argv[1:])" in path.read_text()
    for step in bundle.STEPS:
        assert bundle.job_args(step) == [step]
    with pytest.raises(ValueError, match="no Spark job for step 'prepare_run'"):
        bundle.job_args("prepare_run")


@pytest.mark.parametrize("argv", [[], ["prepare_run", "--input", "x"], ["--input", "x"]])
def test_the_entry_point_names_the_steps_when_not_given_one(argv, capsys):
    from lakefs_gc.jobs import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the first argument names the Spark step" in err
    assert "list_committed, list_slices, compute_candidates, attribute_space, delete" in err


def test_the_zip_is_built_once_per_content_and_holds_the_package_only(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(bundle.ENV_CACHE_DIR, str(cache))
    first = bundle.py_files()
    assert first.parent == cache
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    mtime = first.stat().st_mtime_ns
    assert bundle.py_files() == first
    assert first.stat().st_mtime_ns == mtime  # reused, not rewritten
    with zipfile.ZipFile(first) as z:
        names = set(z.namelist())
    expected = {
        f"lakefs_gc/{p.relative_to(bundle.package_dir()).as_posix()}"
        for p in bundle.package_dir().rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert expected <= names
    assert "lakefs_gc/lakefs/proto/committed.proto" in names
    assert all(n.startswith("lakefs_gc/") and "__pycache__" not in n for n in names)

    # another content (a package that changed or was upgraded) gets another zip
    fake = tmp_path / "pkg" / "lakefs_gc"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("x = 1\n")
    monkeypatch.setattr(bundle, "package_dir", lambda: fake)
    one = bundle.py_files()
    (fake / "__init__.py").write_text("x = 2\n")
    two = bundle.py_files()
    assert len({first, one, two}) == 3
    with zipfile.ZipFile(two) as z:
        assert z.read("lakefs_gc/__init__.py") == b"x = 2\n"


def test_a_cache_others_can_write_to_is_refused(tmp_path, monkeypatch):
    cache = tmp_path / "shared"
    cache.mkdir()
    os.chmod(cache, 0o777)
    monkeypatch.setenv(bundle.ENV_CACHE_DIR, str(cache))
    with pytest.raises(RuntimeError, match=f"{cache} is not a directory owned by this user .* LAKEFS_GC_CACHE_DIR"):
        bundle.py_files()


def test_write_py_files_rewrites_only_a_changed_zip(tmp_path):
    out = tmp_path / "build" / "lakefs_gc.zip"
    assert bundle.write_py_files(out) is True
    assert bundle.write_py_files(out) is False
    out.with_name("lakefs_gc.zip.sha").write_text("stale")
    assert bundle.write_py_files(out) is True
    assert bundle.main([str(out)]) == 0
    assert Path(out).is_file()
