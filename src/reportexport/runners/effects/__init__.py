"""Side effects, carried out exactly once in effect: the runner and one handler per fixture name."""
