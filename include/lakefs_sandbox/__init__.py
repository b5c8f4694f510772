"""
A lakeFS sandbox for the demo, the benches and the tests; not part of the GC.

- ``emulator``: a lakeFS API emulator (the lakeFS endpoints GC and seeding use, lakeFS's storage
  formats), for machines where lakeFS itself cannot run.
- ``seed``: builds a sample repository through lakefs-sdk, on the emulator or on a real lakeFS.
- ``target``: the real lakeFS named by ``LAKEFS_GC_TARGET_*`` (conformance mode).
- ``sstable_writer``, ``graveler_writer``: write lakeFS's ranges and metaranges.
- ``inprocess``: a whole GC run in one process and one SparkSession (the tests and the benches).
"""
