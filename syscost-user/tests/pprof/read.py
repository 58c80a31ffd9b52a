"""A second reader of syscost's pprof profiles, apart from syscost's own: Python's
protobuf over pprof's profile.proto (compiled by protoc into the directory given).

    python3 read.py GENERATED_DIR PROFILE.pb.gz

One line per sample, its fields separated by tabs: its values (as many as the sample
types), its pid and comm labels, and its frames' functions outermost first, `;` between
them (an address where a frame has no function). The first line names the sample
types."""

import gzip
import sys

sys.path.insert(0, sys.argv[1])
import profile_pb2  # noqa: E402  (generated into sys.argv[1])

profile = profile_pb2.Profile()
with gzip.open(sys.argv[2]) as f:
    profile.ParseFromString(f.read())
strings = profile.string_table
functions = {f.id: f for f in profile.function}
locations = {loc.id: loc for loc in profile.location}
print("types", " ".join(f"{strings[t.type]}/{strings[t.unit]}" for t in profile.sample_type))


def name(location_id):
    loc = locations[location_id]
    if not loc.line:
        return hex(loc.address)
    return strings[functions[loc.line[-1].function_id].name]


for sample in profile.sample:
    labels = {strings[l.key]: (strings[l.str] if l.str else l.num) for l in sample.label}
    frames = ";".join(reversed([name(i) for i in sample.location_id]))
    fields = [str(v) for v in sample.value] + [str(labels.get("pid")), str(labels.get("comm")), frames]
    print("\t".join(fields))
