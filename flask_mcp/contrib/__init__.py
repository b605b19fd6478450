"""Optional integrations, each imported only when used."""
