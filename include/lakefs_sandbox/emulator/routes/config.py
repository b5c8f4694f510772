"""The server's configuration: ``/healthcheck`` (no auth) and ``/config``."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from lakefs_sandbox.emulator.routes.common import API, VERSION, SettingsDep, storage_config

health = APIRouter()  # outside the authenticated API router
router = APIRouter()


@health.get(API + "/healthcheck")
def healthcheck():
    return Response(status_code=204)


@router.get("/config")
def get_config(settings: SettingsDep):
    # as lakeFS 1.84 with one blockstore: an empty storage_config_list, no capabilities listed
    return {
        "version_config": {"version": VERSION, "version_context": "lakeFS"},
        "storage_config": storage_config(settings),
        "storage_config_list": [],
        "ui_config": {},
        "capabilities_config": {},
    }


@router.get("/config/storage")
def get_storage_config(settings: SettingsDep):
    return storage_config(settings)


@router.get("/config/version")
def get_version():
    return {"version": VERSION, "version_context": "lakeFS"}


@router.get("/config/garbage-collection")
def get_gc_config(settings: SettingsDep):
    return {"grace_period": settings.grace_period}
