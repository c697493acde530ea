"""The fault suite: real processes, a real PostgreSQL cluster of its own, both object stores.

`python -m tests.faults --runs 200` (or `./scripts/faults`) runs it in full; `test_faults.py`
runs a short fixed-seed run inside `./scripts/test`.
"""
