"""Write bench/h200/sessions.json: for every JSON result under bench/h200/, the dates of the commits that changed it
(from git log), so that the README can say when the gpu preset ran on the H200 without a git history at hand (a
shallow CI clone has none). Run it after committing new H200 results:

    python tools/h200_sessions.py && git add bench/h200/sessions.json
"""
import json, subprocess
from pathlib import Path
root = Path(__file__).resolve().parent.parent
box = root/"bench"/"h200"

def dates(path: Path) -> list[str]:
    out = subprocess.run(["git", "log", "--format=%ad", "--date=short", "--", str(path.relative_to(root))], cwd=root,
                         capture_output=True, text=True, check=True).stdout.split()
    return sorted(set(out))

if __name__ == "__main__":
    files = sorted(p for p in box.glob("*.json") if p.name != "sessions.json")   # the results a session measured
    d = {str(p.relative_to(box)): dates(p) for p in files}
    d = {k: v for k, v in d.items() if v}
    all_dates = sorted({x for v in d.values() for x in v})
    tmp = box/"sessions.json.tmp"
    tmp.write_text(json.dumps(dict(note="commit dates of each H200 result file (tools/h200_sessions.py)",
                                   dates=all_dates, files=d), indent=1) + "\n")
    tmp.replace(box/"sessions.json")
    print(f"bench/h200/sessions.json: {len(d)} files, sessions on {', '.join(all_dates)}")
