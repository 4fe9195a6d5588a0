#!/usr/bin/env python3
"""Miss ratios of libCacheSim's LRU, SIEVE, S3-FIFO and W-TinyLFU on traces purgeable-bench wrote.

purgeable-bench runs this as a subprocess, in the same run as its own policies, so the two sides
of its miss-ratio table replay the same files:

    python3 Benchmarks/scripts/libcachesim_missratios.py JOBS.json

JOBS.json is a list of {"id": ..., "trace": PATH, "unit": "objects" | "bytes", "capacity": N}.
Each trace is in libCacheSim's oracleGeneral binary format: one 24-byte little-endian record per
request (uint32 timestamp, uint64 object id, uint32 object size, int64 next access, -1 unknown).

Capacities mean what they mean on the Swift side:
- "objects": the reader ignores object sizes (ReaderInitParam.ignore_obj_size), so every object
  costs 1 and the cache holds N objects;
- "bytes": the cache holds N bytes of objects (object metadata not counted, as by default).

Every policy runs with libCacheSim's defaults (W-TinyLFU: a 1% window and an SLRU main; S3-FIFO:
a 10% small queue, a 90% ghost, promotion after 2 hits... as the package sets them). Prints one
JSON object on stdout: {"libcachesim": VERSION, "results": [{"id", "policy", "missRatio",
"byteMissRatio"}]}. Exits 3, saying so on stderr, when the libcachesim package is not installed
(`make bench-deps` installs it).
"""

import json
import sys

try:
    import libcachesim as lcs
except ImportError as error:
    print(f"libcachesim is not installed ({error}); `make bench-deps` installs it (pip install libcachesim==0.3.5)", file=sys.stderr)
    sys.exit(3)

POLICIES = [
    ("lru", lambda c: lcs.LRU(c)),
    ("sieve", lambda c: lcs.Sieve(c)),
    ("s3fifo", lambda c: lcs.S3FIFO(c)),
    ("tinylfu", lambda c: lcs.WTinyLFU(c)),
]


def reader(path, unit):
    params = lcs.ReaderInitParam()
    params.ignore_obj_size = unit == "objects"
    return lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE, params)


def main():
    if len(sys.argv) != 2:
        print("usage: libcachesim_missratios.py JOBS.json", file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    results = []
    for job in jobs:
        if job["unit"] not in ("objects", "bytes"):
            print(f"job {job['id']}: unit must be objects or bytes, not {job['unit']!r}", file=sys.stderr)
            return 2
        for name, make in POLICIES:
            # An int capacity: a float would be read as a share of the working set.
            cache = make(int(job["capacity"]))
            miss, byte_miss = cache.process_trace(reader(job["trace"], job["unit"]))
            results.append({"id": job["id"], "policy": name, "missRatio": miss, "byteMissRatio": byte_miss})
    version = getattr(lcs, "__version__", "unknown")
    json.dump({"libcachesim": version, "results": results}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
