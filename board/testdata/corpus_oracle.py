#!/usr/bin/env python3
"""Writes corpus_statuses.json: how bmad-loop's loader (docs/formats/board.md, "Reading") reads
each board of the shared corpus. PyYAML safe_load on text read with universal newlines;
str(key); str(value).strip(); drafted folded to ready-for-dev for story keys. A board
that PyYAML cannot load, or that has no development_status mapping, maps to its error.

One deliberate difference (docs/formats/board.md): a value that is a mapping with a
scalar status key is read as that status, where bmad-loop reads the dict's repr. A list,
or a mapping without such a key, is recorded as null: the row has no status.

Usage: python3 corpus_oracle.py "$FILETXN_CORPUS/boards" > corpus_statuses.json
"""
import json
import os
import re
import sys

import yaml

STORY = re.compile(r"^(\d+)-(\d+)([a-z]?)-(.+)$")


def read(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        return {"error": "invalid YAML: %s" % str(e).splitlines()[0]}
    if not isinstance(data, dict):
        return {"error": "no top-level mapping"}
    ds = data.get("development_status")
    if not isinstance(ds, dict) or not ds:
        return {"error": "missing development_status map"}
    rows = {}
    for k, v in ds.items():
        key = str(k)
        if isinstance(v, dict) and "status" in v and not isinstance(v["status"], (dict, list)):
            v = v["status"]
            if v is None:
                v = ""
        if isinstance(v, (dict, list)):
            rows[key] = None
            continue
        status = str(v).strip()
        if STORY.match(key) and status == "drafted":
            status = "ready-for-dev"
        rows[key] = status
    return {"rows": rows}


def main():
    root = sys.argv[1]
    out = {}
    for name in sorted(os.listdir(root)):
        out[name] = read(os.path.join(root, name))
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
