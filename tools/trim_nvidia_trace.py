#!/usr/bin/env python3
"""Keeps the records of a recorded NVIDIA trace (polychip.nvidia_trace/1,
written by `polychip certify --record-nvidia-trace`) whose outputs take at
most --max-bytes of base64, so that the trace can ship in the repository;
certify --nvidia-trace emulates the cases left out. Records are copied
as they are (data and checksums untouched); the file is written atomically.

  python3 tools/trim_nvidia_trace.py full.json trimmed.json --max-bytes 16384 \
      --keep-op gemm
"""
import argparse
import json
import os
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("destination")
    parser.add_argument("--max-bytes", type=int, required=True,
                        help="largest base64 size of one record's outputs")
    parser.add_argument("--keep-op", action="append", default=[],
                        help="keep every record of this op whatever its size "
                             "(may be repeated)")
    args = parser.parse_args()
    with open(args.source) as f:
        trace = json.load(f)
    if trace.get("schema") != "polychip.nvidia_trace/1":
        sys.exit(f"{args.source}: not a polychip.nvidia_trace/1 file")
    records = trace["records"]
    kept = [r for r in records
            if r["key"]["op"] in args.keep_op
            or sum(len(o["data"]) for o in r["outputs"]) <= args.max_bytes]
    trace["records"] = kept
    folder = os.path.dirname(os.path.abspath(args.destination))
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False) as tmp:
        json.dump(trace, tmp, indent=1)
        tmp.write("\n")
    os.chmod(tmp.name, 0o644)
    os.replace(tmp.name, args.destination)
    print(f"kept {len(kept)} of {len(records)} records in {args.destination}")


if __name__ == "__main__":
    main()
