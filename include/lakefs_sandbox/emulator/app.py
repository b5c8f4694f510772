"""The HTTP app: the routers of ``routes/`` assembled over one Catalog, with fault injection."""

from __future__ import annotations

from fastapi import APIRouter, Depends, FastAPI, Request

from .core import APIError, Catalog, Settings
from .faults import install as install_faults
from .routes import commits, config, emulator, gc, imports, objects, repositories, tags
from .routes.common import API, auth, json_response


def create_app(settings: Settings, catalog: Catalog | None = None) -> FastAPI:
    app = FastAPI(title="lakeFS API emulator", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.catalog = catalog or Catalog(settings)
    app.state.settings = settings
    app.state.import_tasks = imports.ImportTasks()

    @app.exception_handler(APIError)
    async def _api_error(_: Request, exc: APIError):
        return json_response(exc.status, {"message": exc.message})

    install_faults(app, auth)
    app.include_router(config.health)
    api = APIRouter(prefix=API, dependencies=[Depends(auth)])
    for area in (config, repositories, objects, commits, tags, imports, gc):
        api.include_router(area.router)
    app.include_router(api)
    app.include_router(emulator.router)
    app.include_router(emulator.fallback)  # last: anything else
    return app
