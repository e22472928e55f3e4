"""podtax analyzer service."""
