#!/usr/bin/env python3
"""Counts ik-core's public API from its rustdoc output, per public module.

Run after `cargo doc -p ik-core --no-deps` (the default features: what a user of the published
crate sees). Counts what rustdoc documents as reachable public API, so items that are `pub` in a
private module, or methods of a `pub(crate)` type, are not counted; `#[doc(hidden)]` items are not
documented, so they are not counted either:

- items: every struct, enum, trait, function, constant, static, type alias and macro page
  (re-exports are not pages of their own: an item is counted once, where it is defined);
- methods: inherent methods and associated constants of those types (the `impl Type` blocks,
  not trait implementations), and the methods a public trait declares.

Prints a Markdown table (module, items, methods) and the totals; `--check N` exits 1 when the
total of items and methods exceeds N (a budget for CI).

Usage: .ci/count_public.py [target/doc/ik_core] [--check N]
"""

import os
import re
import sys

KINDS = ("struct", "enum", "trait", "fn", "constant", "static", "type", "macro", "union")


def count_methods(kind, html):
    if kind == "trait":
        return len(re.findall(r'id="(?:ty)?method\.[A-Za-z0-9_]+"', html))
    if kind not in ("struct", "enum", "union"):
        return 0
    start = html.find('id="implementations-list"')
    if start < 0:
        return 0
    end = html.find('id="trait-implementations"', start)
    if end < 0:
        end = html.find('id="synthetic-implementations"', start)
    section = html[start : end if end >= 0 else len(html)]
    return len(re.findall(r'id="(?:method|associatedconstant)\.[A-Za-z0-9_]+"', section))


def main():
    args = sys.argv[1:]
    budget = None
    if "--check" in args:
        i = args.index("--check")
        budget = int(args[i + 1])
        del args[i : i + 2]
    root = args[0] if args else "target/doc/ik_core"
    if not os.path.isdir(root):
        sys.exit(f"{root} not found: run `cargo doc -p ik-core --no-deps` first")
    per_module = {}
    for dirpath, _, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        module = "(crate root)" if rel == "." else rel.split(os.sep)[0]
        if module == "prelude":
            continue  # re-exports only (glam's `Vec3` and `Quat` are inlined there)
        for name in files:
            m = re.match(r"(%s)\.[A-Za-z0-9_]+\.html$" % "|".join(KINDS), name)
            if not m:
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                html = f.read()
            if 'http-equiv="refresh"' in html:
                continue  # a redirect page for a re-export from a private module
            items, methods = per_module.get(module, (0, 0))
            per_module[module] = (items + 1, methods + count_methods(m.group(1), html))
    print("| module | items | methods |")
    print("|---|---|---|")
    for module in sorted(per_module):
        items, methods = per_module[module]
        print(f"| `{module}` | {items} | {methods} |")
    total_items = sum(i for i, _ in per_module.values())
    total_methods = sum(m for _, m in per_module.values())
    print(f"| total | {total_items} | {total_methods} |")
    if budget is not None and total_items + total_methods > budget:
        sys.exit(f"ik-core exposes {total_items + total_methods} public items and methods, budget {budget}")


if __name__ == "__main__":
    main()
