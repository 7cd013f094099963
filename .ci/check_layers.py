#!/usr/bin/env python3
"""Fails when a lower layer of bevy_ik imports a higher one (docs/architecture.md).

Layers, bottom to top: data (components, with the per-feature components in
components/<feature>.rs: pure data embedding the core's settings) <- io (entity -> model-space
target, Transform <-> Pose, bone look-up) <- systems (set-up, prepare, gather, solve, writeback,
the stage kinds' registration) <- plugin (lib.rs). Every module of crates/bevy_ik/src must be in
LAYERS (a file in a folder, `components/rig.rs`, counts as its folder's module): a new module
fails the check until it is given a layer.

KNOWN_BACK_EDGES lists the back edges that remain (a ratchet): a new one fails, and one that
is gone fails too until it is removed from the list, so the list only shrinks.

Usage: .ci/check_layers.py [crate src dir]   (default crates/bevy_ik/src)
"""

import pathlib
import re
import sys

LAYERS = {
    # data
    "error": 0,
    "components": 0,
    "balance": 0,
    "limb_batch": 0,
    # io
    "pose_io": 1,
    "setup": 1,
    # systems
    "character": 2,
    "pipeline": 2,
    "stage": 2,
    "kind": 2,
    "limb": 2,
    "humanoid": 2,
    "rig": 2,
    "behaviours": 2,
    "grounding": 2,
    "vr": 2,
    "vrm": 2,
    "debug_draw": 2,
    "secondary": 2,
    "vrm_spring": 2,
    # plugin
    "lib": 3,
}
NAMES = ["data", "io", "systems", "plugin"]

# (from, to): back edges still to remove, each with its reason (none left: the list may only
# shrink, so a new back edge fails).
KNOWN_BACK_EDGES = {}

USE = re.compile(r"\bcrate::(\{[^}]*\}|[a-z_][a-z0-9_]*)")


def imports(text):
    """Modules of the crate a file names through `crate::` paths (use lines and inline)."""
    out = set()
    for m in USE.finditer(text):
        group = m.group(1)
        if group.startswith("{"):
            for part in group[1:-1].split(","):
                head = part.strip().split("::")[0].strip()
                if head:
                    out.add(head)
        else:
            out.add(group)
    return out


def main():
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "crates/bevy_ik/src")
    failures = []
    seen_back = set()
    for path in sorted(src.rglob("*.rs")):
        # A file of a folder module (`components/rig.rs`) belongs to that module's layer.
        rel = path.relative_to(src)
        module = rel.parts[0] if len(rel.parts) > 1 else path.stem
        if module not in LAYERS:
            failures.append(f"{path}: module `{module}` has no layer in .ci/check_layers.py")
            continue
        # Comments and doc links do not import: drop `//` lines.
        text = "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("//")
        )
        for target in sorted(imports(text)):
            if target not in LAYERS or target == module:
                continue  # an item of lib.rs re-exported at the root, or itself
            if LAYERS[target] > LAYERS[module]:
                edge = (module, target)
                seen_back.add(edge)
                if edge not in KNOWN_BACK_EDGES:
                    failures.append(
                        f"{path}: `{module}` ({NAMES[LAYERS[module]]}) imports `{target}` "
                        f"({NAMES[LAYERS[target]]}): a lower layer must not import a higher one"
                    )
    for edge, why in KNOWN_BACK_EDGES.items():
        if edge not in seen_back:
            failures.append(
                f"known back edge {edge[0]} -> {edge[1]} ({why}) is gone: remove it from "
                "KNOWN_BACK_EDGES"
            )
    for f in failures:
        print(f"check_layers: {f}")
    if failures:
        return 1
    print(
        f"check_layers: {len(LAYERS)} modules, no new back edge "
        f"({len(KNOWN_BACK_EDGES)} known: {', '.join(f'{a}->{b}' for a, b in KNOWN_BACK_EDGES)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
