"""
The chaos bench (``python -m bench chaos``): faults in the compose stack while people write.

:mod:`~lakefs_sandbox.chaos.writers` (people using lakeFS), :mod:`~lakefs_sandbox.chaos.faults`
(the seed's plan, and striking and healing services), :mod:`~lakefs_sandbox.chaos.checker`
(lakeFS's view against the store), :mod:`~lakefs_sandbox.chaos.run` (the runs, one fault each, and
the quiet run), :mod:`~lakefs_sandbox.chaos.table` (the figures docs/safety.md shows).
"""
