"""The frozen job status graph: one fixture, and the means to keep every layer to it.

Standard library only. `graph` loads and validates a fixture, `transitions` answers the case
study's `STATES` / `can_transition` / `apply_transition` for it, `render` draws it, `sql`
writes its database guards, `typed_names` its `Literal` types, `generated` keeps generated
files current, and `gate` fails CI when anything drifts from it.
"""

__version__ = "0.1.0"
