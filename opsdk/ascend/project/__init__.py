"""CANN operator projects: msopgen 8.x projects with opsdk's generated sources, CMake-module
projects for 9.x, the templates they are rendered from, and the CANN headers the generated
C++ is compiled against in tests. The public names are re-exported by :mod:`opsdk.ascend`."""
