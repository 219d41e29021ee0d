set(OP_PROTO_TARGET "cust_op_proto")
set(ONNX_PLUGIN_TARGET "cust_onnx_parsers")
