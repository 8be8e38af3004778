#!/usr/bin/env python3
"""Fails when files under src/ import each other in a circle.

Data flows one way through hrec (read -> decode -> order -> unwind -> symbolize -> aggregate ->
output); a file that imports a file which imports it back is a design bug. This builds the
graph of `use crate::...`, `use super::...` and `crate::a::b::` paths between the files of
src/ (an item path resolves to the deepest file it names) and prints every strongly connected
group of more than one file.

Usage: scripts/check-cycles.py [SRC]   (default: src next to this script's parent)
Exit status: 0 without cycles, 1 with.
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src")
root = os.path.normpath(root)

def module_of(path):
    rel = os.path.relpath(path, root)[:-3]
    parts = rel.split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts

files = {}
for d, _, names in os.walk(root):
    for n in names:
        if n.endswith(".rs"):
            p = os.path.join(d, n)
            files[tuple(module_of(p))] = os.path.relpath(p, root)

def resolve(segs):
    """The deepest file a module path names."""
    for k in range(len(segs), -1, -1):
        if tuple(segs[:k]) in files:
            return tuple(segs[:k])
    return None

# `use` trees: expand {a, b::c} groups one level deep, enough for this code base.
use_re = re.compile(r"\buse\s+((?:crate|super|self)(?:::[\w{}, :*\n]+)?)\s*;", re.S)
path_re = re.compile(r"\b(crate(?:::\w+)+)")

def expand(tree):
    tree = re.sub(r"\s+", "", tree)
    m = re.match(r"^(.*?)::\{(.*)\}$", tree)
    if not m:
        return [tree]
    head, body = m.groups()
    out, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur:
        out.append(cur)
    res = []
    for o in out:
        res.extend(expand(head + "::" + o) if o not in ("self",) else [head])
    return res

graph = {m: set() for m in files}
for mod, rel in files.items():
    text = open(os.path.join(root, rel), encoding="utf-8").read()
    # Test modules may import anything of their file's parent; they are not part of the graph.
    text = re.split(r"#\[cfg\(test\)\]\s*mod\s+tests", text)[0]
    # Comments (doc links included) are not imports.
    text = re.sub(r"//[^\n]*", "", text)
    here = list(mod)
    paths = []
    for t in use_re.findall(text):
        paths.extend(expand(t))
    paths.extend(path_re.findall(text))
    for p in paths:
        segs = [s for s in p.split("::") if s]
        if not segs:
            continue
        if segs[0] == "crate":
            base = []
            segs = segs[1:]
        elif segs[0] in ("super", "self"):
            base = list(here)
            while segs and segs[0] in ("super", "self"):
                if segs[0] == "super":
                    base = base[:-1]
                segs = segs[1:]
        else:
            continue
        target = resolve(base + segs)
        if target is not None and target != mod and target != tuple(mod[:len(target)]):
            graph[mod].add(target)

# Tarjan's strongly connected components.
index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)

def visit(v):
    index[v] = low[v] = n[0]
    n[0] += 1
    stack.append(v)
    on.add(v)
    for w in graph[v]:
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            comps.append(comp)

for v in sorted(graph):
    if v not in index:
        visit(v)

if not comps:
    print(f"check-cycles: no import cycles among {len(files)} files of {root}")
    sys.exit(0)
for c in comps:
    names = sorted(files[m] for m in c)
    edges = sorted(f"{files[a]} -> {files[b]}" for a in c for b in graph[a] if b in c)
    print(f"check-cycles: import cycle among {', '.join(names)}:")
    for e in edges:
        print(f"    {e}")
sys.exit(1)
