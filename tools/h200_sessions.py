"""Write bench/h200/sessions.json and bench/h100/sessions.json: for every JSON result under each, the dates of the
commits that changed it (from git log), so that the README can say when the gpu preset ran on which card without a
git history at hand (a shallow CI clone has none). Run it after committing new GPU results:

    python tools/h200_sessions.py && git add bench/h200/sessions.json bench/h100/sessions.json
"""
import json, subprocess
from pathlib import Path
root = Path(__file__).resolve().parent.parent
BOXES = {"h200": "H200", "h100": "H100"}   # bench/<folder>: the card its results came from

def dates(path: Path) -> list[str]:
    out = subprocess.run(["git", "log", "--format=%ad", "--date=short", "--", str(path.relative_to(root))], cwd=root,
                         capture_output=True, text=True, check=True).stdout.split()
    return sorted(set(out))

def write(folder: str, card: str):
    "bench/<folder>/sessions.json, written whole or not at all."
    box = root/"bench"/folder
    files = sorted(p for p in box.glob("*.json") if p.name != "sessions.json")   # the results a session measured
    d = {str(p.relative_to(box)): dates(p) for p in files}
    d = {k: v for k, v in d.items() if v}
    all_dates = sorted({x for v in d.values() for x in v})
    tmp = box/"sessions.json.tmp"
    tmp.write_text(json.dumps(dict(note=f"commit dates of each {card} result file (tools/h200_sessions.py)",
                                   dates=all_dates, files=d), indent=1) + "\n")
    tmp.replace(box/"sessions.json")
    print(f"bench/{folder}/sessions.json: {len(d)} files, sessions on {', '.join(all_dates)}")

if __name__ == "__main__":
    for folder, card in BOXES.items(): write(folder, card)
