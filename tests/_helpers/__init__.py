"""Helpers shared by opsdk's own tests (imported as ``tests._helpers.<module>``; the tests
are packages under tests/, one folder per wing of opsdk). Test modules never import each
other: what two of them share lives here."""
