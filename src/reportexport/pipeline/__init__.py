"""From a saved query to CSV in a temp object: the export itself, and the catalog checked
against its sources."""
