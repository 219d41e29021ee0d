"""Helpers shared by opsdk's own tests (imported as ``_helpers.<module>``; tests/ is on
sys.path). Test modules never import each other: what two of them share lives here."""
