"""Stand-in for msopgen 8.1's cmake/util/aicpu_parser_ini.py: the same TYPE_LIST line, the same
refusal of a type not in it; writes the ini files' sections as JSON."""
import json
import sys

TYPE_LIST = ["DT_UINT8", "DT_UINT16", "DT_INT8", "DT_INT16", "DT_INT32", "DT_INT64", "DT_UINT32", "DT_UINT64",
             "DT_FLOAT16", "DT_FLOAT", "DT_DOUBLE", "DT_BOOL", "DT_COMPLEX64", "DT_COMPLEX128"]
ops = {}
for path in [a for a in sys.argv[1:] if a.endswith("ini")]:
    for line in open(path):
        line = line.rstrip()
        if line.startswith("["):
            name = line[1:-1]
            ops[name] = {}
        elif "=" in line:
            key, value = line.split("=", 1)
            a, b = key.split(".")
            if b == "type" and any(t not in TYPE_LIST for t in value.split(",")):
                print(f"{a}.type not support {value}.")
                sys.exit(1)
            ops[name].setdefault(a, {})[b] = value
json.dump(ops, open(sys.argv[-1], "w"))
