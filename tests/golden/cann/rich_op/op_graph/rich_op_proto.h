@golden-same-as cann/rich_op/aicpu/op_proto/rich_op.h
