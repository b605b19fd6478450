"""Integrations with other libraries, each imported only when used."""
