"""Multi-process (and multi-host) training: cluster specs and ports, worker processes, checkpoints, launcher."""
