"""Contoso runtime preparation for astrabox."""
