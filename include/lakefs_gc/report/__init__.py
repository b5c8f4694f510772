"""
The run report in lakeFS's layout.

``layout`` owns every ``_lakefs/retention/gc/...`` path; ``summary`` builds and writes
``summary.json`` from the typed step results; ``marks`` reads earlier marks back.
"""
