"""Composed tops: the GSF spine switch (and, later, the leaf)."""
