#!/bin/bash
# Stand-in for the Ascend C project's build.sh (see ../msopgen): reads the preset vendor, does
# what the install(DIRECTORY ...) rules appended to CMakeLists.txt ask, writes a .run listing.
here=$(cd "$(dirname "$0")"; pwd)
vendor_name=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["configurePresets"][0]["cacheVariables"]["vendor_name"]["value"])' "$here/CMakePresets.json")
stage="$here/build_out/stage"
mkdir -p "$stage/packages/vendors/$vendor_name/op_kernel" "$stage/packages/vendors/$vendor_name/framework/onnx"
cp "$here"/op_kernel/*.cpp "$stage/packages/vendors/$vendor_name/op_kernel/"
cp "$here"/framework/onnx_plugin/*.cc "$stage/packages/vendors/$vendor_name/framework/onnx/"
sed -n 's/^install(DIRECTORY "\(.*\)" DESTINATION \(.*\))$/\1 \2/p' "$here/CMakeLists.txt" |
while read -r src dst; do
  dst="${dst//\$\{vendor_name\}/$vendor_name}"
  mkdir -p "$stage/$dst"
  if [[ "$src" == */ ]]; then cp -R "$src". "$stage/$dst/"; else cp -R "$src" "$stage/$dst/"; fi
done
(cd "$stage" && find . -type f | sort) > "$here/build_out/custom_opp_standin_x86_64.run"
