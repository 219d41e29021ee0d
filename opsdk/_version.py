"""The opsdk version, written once."""

__version__ = "0.1.0"
