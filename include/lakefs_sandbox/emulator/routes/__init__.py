"""
The HTTP layer: lakeFS's REST API (paths, fields and status codes of swagger.yml) over the Catalog.

One router per area (``config``, ``repositories``, ``objects``, ``commits``, ``tags``,
``imports``, ``gc``, the emulator's own ``emulator``); ``common`` holds what they share;
``lakefs_sandbox.emulator.app.create_app`` assembles them.
"""
