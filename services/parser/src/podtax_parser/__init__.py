"""podtax parser service."""
