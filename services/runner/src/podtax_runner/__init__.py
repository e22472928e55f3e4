"""podtax runner service."""
