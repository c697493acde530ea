"""The pure core: the lifecycle, records, parameters, the CSV dialect, settings.

It needs the standard library alone (tests/contract/test_core_alone.py)."""
