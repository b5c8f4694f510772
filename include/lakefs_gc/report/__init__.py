"""
The run report in lakeFS's layout.

``layout`` owns every ``_lakefs/retention/gc/...`` path; ``run_summary`` is ``summary.json`` as a
type (``RunSummary``, through the contract's wire codec); ``summary`` builds and writes it from the
typed step results, ``render`` turns it into lines and rows, ``links`` into URLs a browser opens,
``figures`` into the numbers metrics carry; ``marks`` reads earlier marks back.
"""
