"""The processes' long-running parts: the worker, the effects runner, the sweeper."""
