"""podtax host_agent service."""
