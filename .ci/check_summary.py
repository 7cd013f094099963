#!/usr/bin/env python3
"""Fail unless a demo run's `IK_SUMMARY {json}` line shows a mapped humanoid that met its goals.

Usage: check_summary.py LOG [--min-roles N] [--min-goals N] [--min-stages N] [--switched]

LOG is the demo's captured stdout. The last line starting with `IK_SUMMARY ` is parsed; the run
must have: no error, no required humanoid role missing, at least N roles mapped, at least N
active goals, every goal met with a finite residual, a finite positive mean solve time, and the
screenshot it names written (a non-empty file); with --min-stages, at least N stages in the
character's IK stack, none reporting a problem, every one that is on meeting its goals; with
--switched, the run switched modes in place (at least one mode switch, one character spawned).
"""
import argparse
import json
import math
import os
import sys


def summary_of(path):
    line = None
    with open(path, encoding="utf-8", errors="replace") as log:
        for text in log:
            if text.startswith("IK_SUMMARY "):
                line = text[len("IK_SUMMARY "):]
    if line is None:
        raise SystemExit(f"{path}: no IK_SUMMARY line")
    return json.loads(line)


def finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--min-roles", type=int, default=18)
    parser.add_argument("--min-goals", type=int, default=6)
    parser.add_argument("--min-stages", type=int, default=0)
    parser.add_argument("--switched", action="store_true")
    args = parser.parse_args()
    s = summary_of(args.log)
    name = s.get("character")
    problems = []
    if s.get("error"):
        problems.append(f"error: {s['error']}")
    if s.get("missing_required"):
        problems.append(f"required roles missing: {s['missing_required']}")
    if s.get("roles_mapped", 0) < args.min_roles:
        problems.append(f"{s.get('roles_mapped')} roles mapped, want >= {args.min_roles}")
    if s.get("goals", 0) < args.min_goals:
        problems.append(f"{s.get('goals')} goals, want >= {args.min_goals}")
    if s.get("goals_met") != s.get("goals"):
        problems.append(f"{s.get('goals_met')} of {s.get('goals')} goals met")
    stages = s.get("stages", [])
    if len(stages) < args.min_stages:
        problems.append(f"{len(stages)} stages ({stages}), want >= {args.min_stages}")
    if args.min_stages:
        for stage in stages:
            status = stage.rsplit(": ", 1)[-1]
            if not (status == "off" or status.startswith("met")):
                problems.append(f"stage {stage!r}")
    if args.switched and not (s.get("mode_switches", 0) >= 1 and s.get("character_spawns") == 1):
        problems.append(f"not switched in place: {s.get('mode_switches')} mode switches, "
                        f"{s.get('character_spawns')} characters spawned")
    residuals = s.get("residuals", {})
    if len(residuals) != s.get("goals"):
        problems.append(f"{len(residuals)} residuals for {s.get('goals')} goals")
    for goal, r in residuals.items():
        if not (finite(r.get("last")) and finite(r.get("max"))):
            problems.append(f"{goal}: residual not finite ({r})")
        elif not r.get("met"):
            problems.append(f"{goal}: not met ({r['last']} {r['unit']})")
    if not (finite(s.get("mean_solve_us")) and s["mean_solve_us"] > 0 and s.get("solves", 0) > 0):
        problems.append(f"no timed solve ({s.get('solves')} solves, {s.get('mean_solve_us')} µs)")
    shot = s.get("screenshot")
    if not shot or not os.path.isfile(shot) or os.path.getsize(shot) == 0:
        problems.append(f"screenshot not written: {shot!r}")
    worst = max((r["max"] for r in residuals.values() if finite(r.get("max"))), default=float("nan"))
    print(f"{args.log}: {name}: {s.get('roles_mapped')}/{s.get('roles_total')} roles, "
          f"{s.get('goals_met')}/{s.get('goals')} goals met, largest residual over the run "
          f"{worst:.3g}, {s.get('mean_solve_us', float('nan')):.0f} µs per solve (max "
          f"{s.get('max_solve_us', float('nan')):.0f}; the IK system set "
          f"{s.get('mean_solve_set_us', float('nan')):.0f}), {shot}")
    if problems:
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        raise SystemExit(f"{args.log}: the demo's summary fails {len(problems)} check(s)")


if __name__ == "__main__":
    main()
