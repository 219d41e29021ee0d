"""ATC and what it accepts: the ``atc`` command plan, the doctor (what CANN's ONNX parser
will reject, per CANN version) and the parser's OriginOpType keys. The public names are
re-exported by :mod:`opsdk.ascend`."""
