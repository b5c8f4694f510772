"""Every namespace kind has all its parts (docs/development.md, "Where a change goes": a new storage
kind): its record in NAMESPACE_KINDS, an adapter class that answers the whole Storage protocol itself
(restoring and soft delete included), a namespace that parses to it, its settings from the
environment, a function on the Airflow side for each connection type it names, and its row in the
tests' store fixtures; and the bullet of the docs names the files all that lives in."""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path

import pytest

from lakefs_gc.storage import NAMESPACE_KINDS, kind_for_connection, kind_named, kind_of, open_storage
from lakefs_gc.storage.base import CloudStorage, Storage
from lakefs_gc.storage.settings import (
    ENV_ACCESS_KEY,
    ENV_AZURE_ACCOUNT_KEY,
    ENV_AZURE_ACCOUNT_URL,
    ENV_ENDPOINT_URL,
    ENV_GCS_ANONYMOUS,
    ENV_GCS_ENDPOINT_URL,
    ENV_SECRET_KEY,
)

ROOT = Path(__file__).resolve().parents[2]

# A namespace of each kind, as lakeFS writes it
EXAMPLES = {
    "local": "local://repo1",
    "s3": "s3://bucket/repo1",
    "azure": "https://acct.blob.core.windows.net/ctr/repo1",
    "gs": "gs://bucket/repo1",
}
# Every kind's LAKEFS_GC_<KIND>_* at once, pointing nowhere: opening a store sends no request
ENVIRON = {
    ENV_ENDPOINT_URL: "http://127.0.0.1:9",
    ENV_ACCESS_KEY: "key",
    ENV_SECRET_KEY: "secret",
    ENV_AZURE_ACCOUNT_URL: "http://127.0.0.1:9/acct",
    ENV_AZURE_ACCOUNT_KEY: "a2V5a2V5a2V5a2V5",
    ENV_GCS_ENDPOINT_URL: "http://127.0.0.1:9",
    ENV_GCS_ANONYMOUS: "1",
}
# What differs by kind in the protocol: each adapter says it itself, never a base class it shares
OWN = ("restorability", "restore_key", "soft_delete_days")

KINDS = sorted(NAMESPACE_KINDS)


def _protocol_members() -> dict[str, object]:
    """The Storage protocol's methods and properties (its data attributes: :func:`_protocol_attributes`)."""
    return {
        name: m
        for name, m in vars(Storage).items()
        if not name.startswith("_") and (inspect.isfunction(m) or isinstance(m, property))
    }


def _protocol_attributes() -> set[str]:
    return {name for name in Storage.__annotations__ if not name.startswith("_")}


def _params(f) -> list[str]:
    return [p for p in inspect.signature(f).parameters if p != "self"]


def test_every_kind_has_an_example_and_a_store_fixture():
    from tests.conftest import BLOCKSTORE_FIXTURES

    assert set(EXAMPLES) == set(NAMESPACE_KINDS), "give the new kind a namespace example here"
    assert set(BLOCKSTORE_FIXTURES) == set(NAMESPACE_KINDS), "give the new kind its row in tests/conftest.py"


@pytest.mark.parametrize("scheme", KINDS)
def test_an_example_namespace_parses_to_its_kind(scheme):
    kind = NAMESPACE_KINDS[scheme]
    assert kind.scheme == scheme
    assert kind_named(EXAMPLES[scheme]) is kind
    assert kind_of(EXAMPLES[scheme], "/srv/lakefs")[0] is kind


@pytest.mark.parametrize("scheme", KINDS)
def test_the_adapter_implements_every_method_of_the_storage_protocol(scheme):
    adapter = NAMESPACE_KINDS[scheme].adapter
    members = _protocol_members()
    assert set(OWN) <= set(members)
    for name, member in members.items():
        assert hasattr(adapter, name), f"{adapter.__name__} lacks Storage.{name}"
        if inspect.isfunction(member):
            mine = getattr(adapter, name)
            assert callable(mine), f"{adapter.__name__}.{name} is not a method"
            assert _params(mine) == _params(member), f"{adapter.__name__}.{name} takes other arguments"
    for name in OWN:
        assert name in vars(adapter), f"{adapter.__name__} must say {name} itself (it differs by kind)"
        assert all(name not in vars(base) for base in adapter.__mro__[1:] if base is not object), (
            f"{name} of {adapter.__name__} comes from a shared base: it differs by kind"
        )


@pytest.mark.parametrize("scheme", KINDS)
def test_the_kind_opens_its_adapter_with_settings_from_the_environment(scheme, tmp_path):
    kind = NAMESPACE_KINDS[scheme]
    _, ns = kind_of(EXAMPLES[scheme], str(tmp_path))
    options = kind.env_options(ns, ENVIRON)
    assert (options is None) == kind.needs_local_root
    if kind.options_type is not None:
        assert isinstance(options, kind.options_type)
    st = open_storage(EXAMPLES[scheme], options, tmp_path)
    assert type(st) is kind.adapter
    assert st.uri
    for name in _protocol_attributes() | {n for n, m in _protocol_members().items() if isinstance(m, property)}:
        assert hasattr(st, name), f"{type(st).__name__} has no {name}"
    assert isinstance(st.max_delete_batch, int)
    assert all(isinstance(getattr(st, p), bool) for p in ("listed_md5", "hashes_locally", "quarantines"))
    assert st.quarantines == kind.needs_local_root  # only the kind without a store of its own quarantines
    assert isinstance(st, CloudStorage) != kind.needs_local_root


@pytest.mark.parametrize("scheme", KINDS)
def test_every_connection_type_of_a_kind_has_its_hook_options_on_the_airflow_side(scheme):
    from lakefs_gc_airflow.hooks import HOOK_OPTIONS

    kind = NAMESPACE_KINDS[scheme]
    assert bool(kind.connection_types) != kind.needs_local_root, "a kind with settings is served by a connection"
    for conn_type in kind.connection_types:
        assert kind_for_connection(conn_type) is kind
        assert conn_type in HOOK_OPTIONS, f"lakefs_gc_airflow.hooks.HOOK_OPTIONS has no function for {conn_type!r}"
        returns = typing.get_type_hints(HOOK_OPTIONS[conn_type])["return"]
        assert returns is kind.options_type, f"{conn_type!r} gives {returns}, {scheme} needs {kind.options_type}"


def test_hook_options_serve_no_connection_type_no_kind_names():
    from lakefs_gc_airflow.hooks import HOOK_OPTIONS

    assert set(HOOK_OPTIONS) == {t for k in NAMESPACE_KINDS.values() for t in k.connection_types}


def _bullet() -> str:
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    found = re.search(r"^- \*\*A new storage kind\*\*.*?(?=^- \*\*|^#|\Z)", text, re.S | re.M)
    assert found, "docs/development.md has no bullet for a new storage kind"
    return found.group(0)


def _named_files(bullet: str) -> set[Path]:
    """The files the bullet names in backticks, from the root, include/lakefs_gc/ or plugins/ as the docs write them."""
    out = set()
    for token in re.findall(r"`([^`\s]+\.py)`", bullet):
        if "<" in token:  # the new kind's own module
            assert (ROOT / token.split("<")[0]).is_dir(), token
            continue
        hits = [
            base / token
            for base in (ROOT, ROOT / "include" / "lakefs_gc", ROOT / "plugins")
            if (base / token).is_file()
        ]
        assert hits, f"docs/development.md names {token}, which is not there"
        out.add(hits[0].resolve())
    return out


def test_the_docs_name_every_file_a_kind_has_a_part_in():
    from lakefs_gc.storage import kinds, namespace, restoring, settings
    from lakefs_gc_airflow import hooks

    named = _named_files(_bullet())
    parts = {inspect.getsourcefile(m) for m in (Storage, kinds, namespace, restoring, settings, hooks)}
    parts |= {str(ROOT / "tests" / "conftest.py"), __file__}
    missing = sorted(str(Path(p).relative_to(ROOT)) for p in parts if Path(p).resolve() not in named)
    assert not missing, f"docs/development.md, 'A new storage kind', does not name {missing}"
    for kind in NAMESPACE_KINDS.values():  # each adapter where the bullet says: a module of its own in storage/
        assert Path(inspect.getsourcefile(kind.adapter)).parent == Path(inspect.getsourcefile(kinds)).parent
