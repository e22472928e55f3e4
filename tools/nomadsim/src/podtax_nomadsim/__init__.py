"""podtax nomadsim: a local, SIMULATED Nomad HTTP API (CSI volumes and plugins). Not a real cluster."""

SIMULATED_HEADER = "X-Podtax-Simulated"
