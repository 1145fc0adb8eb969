# Lists the entry points of one group from the installed distributions, as JSON on one marked line.
# Standard library only; runs on CPython 3.9 to 3.13. argv[1] is the group, argv[2] the project directory
# (kept off sys.path unless the project is installed in develop mode).
import sys

import os


def _developed():
    # A "setup.py develop" install (what pip install -e does with setuptools older than 64) links the
    # project from site-packages with an .egg-link file and puts it on sys.path through easy-install.pth;
    # its metadata is then the project's own .egg-info, which does count as installed.
    import site
    dirs = []
    try:
        dirs += site.getsitepackages()
    except Exception:
        pass
    try:
        dirs.append(site.getusersitepackages())
    except Exception:
        pass
    found = set()
    for d in dirs:
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            if not n.endswith(".egg-link"):
                continue
            try:
                with open(os.path.join(d, n)) as f:
                    target = f.readline().strip()
            except (OSError, UnicodeDecodeError):
                continue
            if target:
                found.add(os.path.abspath(os.path.join(d, target)).rstrip("/"))
    return found


# The working directory must not count as installed: drop '' and '.' before anything else imports, and the
# project directory unless the project is installed in develop mode (build leftovers are not installs).
_drop = {"", "."}
PROJECT = sys.argv[2].rstrip("/") if len(sys.argv) > 2 and sys.argv[2] else ""
DEVELOPED = _developed()
if PROJECT and PROJECT not in DEVELOPED:
    _drop.add(PROJECT)
sys.path[:] = [p for p in sys.path if p.rstrip("/") not in _drop or p == "/"]

import json
import re
import importlib.metadata as md

MARK = "ASTRABOX-ENTRY-POINTS:"


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def dedup_key(dist):
    # The key importlib.metadata's own entry_points() deduplicates by (3.10+): _normalized_name, else the
    # normalized metadata name.
    try:
        key = dist._normalized_name
        if key:
            return key
    except Exception:
        pass
    meta = dist.metadata
    return normalize((meta["Name"] if meta is not None else None) or "")


def entry_points_of(dist):
    # 3.9 returns a list of EntryPoint tuples, 3.10+ an EntryPoints object; both iterate the same way.
    try:
        return list(dist.entry_points)
    except Exception:
        return []


def location(dist):
    try:
        return str(dist.locate_file(""))
    except Exception:
        return ""


def direct_url(dist):
    try:
        text = dist.read_text("direct_url.json")
        if not text:
            return "", False
        data = json.loads(text)
        editable = bool((data.get("dir_info") or {}).get("editable"))
        return str(data.get("url") or ""), editable
    except Exception:
        return "", False


def visible_by_api(group):
    # What importlib.metadata.entry_points itself returns on this version: a dict of group -> list on 3.9,
    # .select(group=) on 3.10+ (dict-style access is deprecated on 3.10-3.11 and gone on 3.12).
    eps = md.entry_points()
    if hasattr(eps, "select"):
        return [(ep.name, ep.value) for ep in eps.select(group=group)]
    return [(ep.name, ep.value) for ep in eps.get(group, ())]


def main():
    group = sys.argv[1]
    out = []
    seen = set()
    for dist in md.distributions():
        # From 3.10, entry_points() keeps only the first distribution of each normalized name on sys.path, by
        # the same key as here (taken from the metadata directory's name where it can be, which is cheap).
        if sys.version_info >= (3, 10):
            key = dedup_key(dist)
            if key in seen:
                continue
            seen.add(key)
        eps = [ep for ep in entry_points_of(dist) if ep.group == group]
        if not eps:
            continue
        # Only a distribution that declares the group has its METADATA parsed: parsing every one is most of
        # this script's time in an environment with many packages.
        meta = dist.metadata
        name = (meta["Name"] if meta is not None else None) or ""
        url, editable = direct_url(dist)
        path = getattr(dist, "_path", None)
        home = os.path.dirname(str(path)).rstrip("/") if path is not None else ""
        if not url and home in DEVELOPED:
            inside = PROJECT and (home == PROJECT or home.startswith(PROJECT + "/"))
            url, editable = "file://" + (PROJECT if inside else home), True
        for ep in eps:
            out.append({
                "name": ep.name,
                "value": ep.value,
                "distribution": name,
                "version": dist.version or "",
                "location": location(dist),
                "metadata_dir": str(path) if path is not None else "",
                "url": url,
                "editable": editable,
            })
    # Keep only what the version's own entry_points() API would hand the platform.
    remaining = {}
    for pair in visible_by_api(group):
        remaining[pair] = remaining.get(pair, 0) + 1
    visible = []
    for item in out:
        pair = (item["name"], item["value"])
        if remaining.get(pair, 0) > 0:
            remaining[pair] -= 1
            visible.append(item)
    result = {"python": list(sys.version_info[:3]), "entry_points": visible}
    sys.stdout.write("\n" + MARK + json.dumps(result) + "\n")
    sys.stdout.flush()


main()
