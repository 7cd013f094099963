#!/usr/bin/env python3
"""Checks that the demo adds no feature to a crate the tests already build.

CI builds `cargo test --workspace` first and the demo (`--features bevy_ik_examples/demo`) after
it, in one target directory. A crate that the demo reaches with more features than the tests is
compiled again, and so is every crate above it (for `glam` or `bevy_utils`: all of Bevy). The
root package's dev-dependencies turn those features on for the tests too ("Feature alignment" in
Cargo.toml); this script fails, naming crate and features, when a dependency update or a new
demo feature breaks that. Only `bevy`, `bevy_internal` and the root package may differ: they sit
at the top of the tree and are cheap to compile again.
"""
import subprocess
import sys

# The top of the tree: the demo's feature is on them, nothing of Bevy is above them.
TOP = ("bevy ", "bevy_internal ", "bevy_ik_examples ")


def features(*args):
    out = subprocess.run(
        ["cargo", "tree", "--workspace", "-e", "normal,build,dev", "-f", "{p}|{f}",
         "--prefix", "none", *args],
        check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        if "|" not in line:
            continue
        package, feats = line.replace(" (*)", "").split("|", 1)
        found.setdefault(package, set()).update(f for f in feats.split(",") if f)
    return found


tests = features()
demo = features("--features", "bevy_ik_examples/demo")
bad = [(p, sorted(demo[p] - f)) for p, f in sorted(tests.items())
       if p in demo and demo[p] - f and not p.startswith(TOP)]
for package, extra in bad:
    print(f"{package}: the demo adds {extra}; add them to the root package's feature alignment")
print(f"{len(tests)} crates in the test build, {len(set(demo) - set(tests))} more in the demo's,"
      f" {len(bad)} compiled with other features")
sys.exit(1 if bad else 0)
