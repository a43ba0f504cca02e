"""perfci: performance-regression CI for MySQL-family servers."""

__version__ = "0.2.0"
