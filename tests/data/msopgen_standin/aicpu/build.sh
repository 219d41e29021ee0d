#!/usr/bin/env bash
# Stand-in for the classic AI CPU project's build.sh (see ../msopgen): what msopgen 8.1's does
# before and around CMake (its AICPU_KERNEL_TARGET export and --so_name, vendor_name,
# ASCEND_TENSOR_COMPILER_INCLUDE, framework/ added only with its CMakeLists.txt), its op info
# checker run, the package tree.
export AICPU_KERNEL_TARGET=cust_aicpu_kernels
vendor_name=customize
if [[ "$vendor_name" = "" ]]; then
  vendor_name=customize
fi
export OPP_CUSTOM_VENDOR=$vendor_name
case "$1" in
  --so_name=*) so_name=$(echo "$1" | cut -d"=" -f2); length=${#so_name}
               export AICPU_KERNEL_TARGET=${so_name:3:($length - 6)} ;;
esac
project_path=$(cd "$(dirname "$0")"; pwd)
if [ -d "$project_path/framework" ] && [ ! -f "$project_path/framework/CMakeLists.txt" ]; then
  echo "CMake Error: $project_path/framework does not contain a CMakeLists.txt file."
  exit 1
fi
if [[ -z "${ASCEND_TENSOR_COMPILER_INCLUDE}" ]]; then
  echo "[ERROR] ENV ASCEND_TENSOR_COMPILER_INCLUDE is not set"
  exit 1
fi
mkdir -p "$project_path/build_out"
tree="$project_path/build_out/makepkg/packages/vendors/$vendor_name"
mkdir -p "$tree/op_impl/cpu/config" "$tree/op_impl/cpu/aicpu_kernel/impl" "$tree/op_proto"
python3 "$project_path/cmake/util/aicpu_parser_ini.py" \
  $(find "$project_path/cpukernel/op_info_cfg" -name '*.ini') \
  "$tree/op_impl/cpu/config/cust_aicpu_kernel.json" || exit 1
proto=$(sed -n 's/^set(OP_PROTO_TARGET "\(.*\)")$/\1/p' "$project_path/cmake/config.cmake")
touch "$tree/op_impl/cpu/aicpu_kernel/impl/lib${AICPU_KERNEL_TARGET}.so" "$tree/op_proto/lib${proto}.so"
grep -q 'opsdk_aicpu.cmake' "$project_path/cpukernel/CMakeLists.txt" || exit 1
{ echo "include=$ASCEND_TENSOR_COMPILER_INCLUDE"; ls "$project_path/op_proto"; \
  ls "$project_path/cpukernel/impl"; (cd "$project_path/build_out/makepkg" && find . -type f | sort); } \
  > "$project_path/build_out/custom_opp_standin_x86_64.run"
