"""podtax scheduler service."""
