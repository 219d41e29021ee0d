"""The NPU executor: an operator on an Ascend NPU through CANN (aclnn for AI Core kernels,
aclop for AI CPU kernels), and the ACL entry points it calls. Never faked: without a
toolkit and a device it raises :class:`~opsdk.errors.DeviceUnavailable` with the reason."""

from ._acl import OpApi, find_op_api
from .executor import (
    ACL_DTYPES,
    ACLNN_ATTR_ABI,
    ENGINES,
    SIGNATURES,
    NpuOperator,
    NpuPlan,
    aclnn_prototype,
    npu_available,
    plan_npu,
)

__all__ = [
    "NpuOperator", "NpuPlan", "plan_npu", "npu_available", "SIGNATURES", "ACL_DTYPES", "ENGINES",
    "ACLNN_ATTR_ABI", "aclnn_prototype", "OpApi", "find_op_api",
]
