"""
The run report in lakeFS's layout.

``layout`` owns every ``_lakefs/retention/gc/...`` path; ``summary`` builds and writes
``summary.json`` from the typed step results, ``render`` turns it into lines and rows, ``links``
into URLs a browser opens; ``marks`` reads earlier marks back.
"""
