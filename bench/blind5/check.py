#!/usr/bin/env python3
"""Standalone checks for the fifth blind must-keep set, bench/blind5 (stdlib only).

Run from anywhere: python3 check.py [path/to/items.json]
Prints PASS/FAIL per check and exits non-zero on any failure.
"""
import gzip, hashlib, json, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ITEMS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "items.json")
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
KINDS = {"goal", "rule", "request", "pending", "decision", "value", "env", "state"}
failures = []


def report(name, errors):
    if errors:
        failures.append(name)
        print(f"FAIL  {name}")
        for e in errors[:30]:
            print(f"      - {e}")
        if len(errors) > 30:
            print(f"      ... {len(errors) - 30} more")
    else:
        print(f"PASS  {name}")


def strings(o):
    """All string values of a decoded JSON record, depth first."""
    if isinstance(o, str):
        yield o
    elif isinstance(o, dict):
        for v in o.values():
            yield from strings(v)
    elif isinstance(o, list):
        for v in o:
            yield from strings(v)


# 1. items.json parses
try:
    with open(ITEMS, encoding="utf-8") as f:
        data = json.load(f)
    errs = []
    for k in ("note", "flags", "compactions"):
        if k not in data:
            errs.append(f"missing top-level key {k}")
    report("items.json parses and has note/flags/compactions", errs)
except Exception as e:  # noqa: BLE001
    report("items.json parses and has note/flags/compactions", [repr(e)])
    sys.exit(1)

flags = re.IGNORECASE if data.get("flags") == "IGNORECASE" else 0
comps = data["compactions"]

# 2. every pattern compiles
errs = []
for c in comps:
    for it in c.get("items", []):
        for p in it["match"]["patterns"]:
            try:
                re.compile(p, flags)
            except re.error as e:
                errs.append(f"{it['id']}: {p!r}: {e}")
    for fa in c.get("false_at_cut", []):
        for p in fa["patterns"]:
            try:
                re.compile(p, flags)
            except re.error as e:
                errs.append(f"{fa['id']}: {p!r}: {e}")
report("every pattern compiles", errs)

# 3. schema / field names
errs = []
for c in comps:
    for k in ("file", "boundary_line", "summary_line", "items", "false_at_cut"):
        if k not in c:
            errs.append(f"{c.get('file')}: missing {k}")
    for it in c.get("items", []):
        if set(it) != {"id", "kind", "text", "source_line", "match"}:
            errs.append(f"{it.get('id')}: item fields {sorted(it)}")
        if it.get("kind") not in KINDS:
            errs.append(f"{it.get('id')}: unknown kind {it.get('kind')}")
        m = it.get("match", {})
        if set(m) != {"mode", "patterns"} or m.get("mode") not in ("all", "any") or not m.get("patterns"):
            errs.append(f"{it.get('id')}: bad match {m}")
    for fa in c.get("false_at_cut", []):
        if set(fa) != {"id", "truth", "patterns"} or not fa.get("patterns"):
            errs.append(f"{fa.get('id')}: false_at_cut fields {sorted(fa)}")
report("schema: field names and kinds as in the first set", errs)

# Load sessions
texts = {}
errs = []
for c in comps:
    path = os.path.join(HERE, c["file"])
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = f.read().split("\n")
    except Exception as e:  # noqa: BLE001
        errs.append(f"{c['file']}: {e!r}")
        continue
    b, s = c["boundary_line"], c["summary_line"]
    try:
        rb = json.loads(lines[b - 1])
        rs = json.loads(lines[s - 1])
    except Exception as e:  # noqa: BLE001
        errs.append(f"{c['file']}: boundary/summary line not JSON: {e!r}")
        continue
    if not (rb.get("type") == "system" and rb.get("subtype") == "compact_boundary"):
        errs.append(f"{c['file']}: L{b} is not a compact_boundary")
    if s != b + 1:
        errs.append(f"{c['file']}: summary_line {s} != boundary_line+1")
    if not (rs.get("type") == "user" and rs.get("isCompactSummary") is True):
        errs.append(f"{c['file']}: L{s} is not an isCompactSummary user record")
    parts = []
    for l in lines[: b - 1]:
        try:
            parts.extend(strings(json.loads(l)))
        except Exception:  # noqa: BLE001
            parts.append(l)
    texts[c["file"], b] = "\n".join(parts)
report("boundary line is compact_boundary and next line is isCompactSummary user record", errs)

# 4. ids unique kebab-case, source_line before boundary
errs = []
seen = set()
for c in comps:
    for it in c.get("items", []) + c.get("false_at_cut", []):
        i = it["id"]
        if not KEBAB.match(i):
            errs.append(f"{i}: not kebab-case")
        if (c["file"], i) in seen:
            errs.append(f"{i}: duplicate id in {c['file']}")
        seen.add((c["file"], i))
    for it in c.get("items", []):
        sl = it["source_line"]
        if not (isinstance(sl, int) and 1 <= sl < c["boundary_line"]):
            errs.append(f"{it['id']}: source_line {sl} not before boundary {c['boundary_line']}")
report("ids unique kebab-case; source_line before boundary", errs)


def safe_search(p, text):
    """re.search that treats an uncompilable pattern as no match (reported by check 2)."""
    try:
        return re.search(p, text, flags) is not None
    except re.error:
        return False


def carried(it, text):
    ps = it["match"]["patterns"]
    hits = [safe_search(p, text) for p in ps]
    return all(hits) if it["match"]["mode"] == "all" else any(hits)


# 5. each item's patterns match the text before the boundary
errs = []
for c in comps:
    t = texts.get((c["file"], c["boundary_line"]))
    if t is None:
        continue
    for it in c.get("items", []):
        if not carried(it, t):
            errs.append(f"{c['file']} {it['id']}: patterns do not match the pre-boundary text")
report("each item's patterns match the pre-boundary transcript under its mode", errs)

# 6. each item's own text carries the item
errs = []
for c in comps:
    for it in c.get("items", []):
        if not carried(it, it["text"]):
            errs.append(f"{c['file']} {it['id']}: own text does not match its patterns")
report("each item's own text carries the item", errs)

# 7. no false_at_cut pattern matches its truth or any item text (line by line)
errs = []
for c in comps:
    lines = []
    for it in c.get("items", []):
        lines.extend((it["id"], l) for l in it["text"].split("\n"))
    for fa in c.get("false_at_cut", []):
        cand = [("truth", l) for l in fa["truth"].split("\n")] + lines
        for p in fa["patterns"]:
            for src, l in cand:
                if safe_search(p, l):
                    errs.append(f"{c['file']} {fa['id']}: {p!r} matches {src}: {l[:80]!r}")
report("no false_at_cut pattern matches its own truth or any item text", errs)

# 8. counts
errs = []
for c in comps:
    n, f = len(c.get("items", [])), len(c.get("false_at_cut", []))
    if not (10 <= n <= 14):
        errs.append(f"{c['file']}: {n} items (want 10-14)")
    if not (4 <= f <= 6):
        errs.append(f"{c['file']}: {f} false_at_cut (want 4-6)")
report("10-14 items and 4-6 false_at_cut per compaction", errs)

# 9. sessions are byte-identical to the public git blobs they came from
EXPECTED_BLOBS = {
    'sessions/promptgrimoire-8c497bed.jsonl.gz': '150783cef289fcb59b7bacea0682b895d89d2fad',
    'sessions/promptgrimoire-c6ee6a00.jsonl.gz': 'c601fe6c853521c783e63eda7b773bec47541d07',
    'sessions/promptgrimoire-ffc93f57.jsonl.gz': 'acccebac3f32a7b4f9ed676f63a870107621e8be',
    'sessions/research-transcript-hook-8b2825a0.jsonl.gz': '46c33d9d158939a327e47c92ec2432114771e993',
}
errs = []
for c in comps:
    exp = EXPECTED_BLOBS.get(c["file"])
    if exp is None:
        errs.append(f"{c['file']}: no expected blob id")
        continue
    with gzip.open(os.path.join(HERE, c["file"]), "rb") as f:
        raw = f.read()
    got = hashlib.sha1(b"blob " + str(len(raw)).encode() + b"\0" + raw).hexdigest()
    if got != exp:
        errs.append(f"{c['file']}: git blob id {got} != {exp}")
    lic = os.path.join(HERE, "LICENSES", os.path.basename(c["file"]).replace(".jsonl.gz", ".txt"))
    if not os.path.exists(lic):
        errs.append(f"{c['file']}: missing {lic}")
    elif not open(lic, encoding="utf-8").readline().startswith("Source: github.com/"):
        errs.append(f"{lic}: first line does not start with 'Source: github.com/'")
report("sessions byte-identical to their source git blobs (git hash-object); LICENSES file present", errs)

print()
print("ALL CHECKS PASSED" if not failures else f"{len(failures)} CHECK(S) FAILED")
sys.exit(1 if failures else 0)
