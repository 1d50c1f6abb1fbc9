"""pip's configuration (`pip config list`: files and PIP_* variables) as uv's command-line flags, one a line, so
that `uv pip install` (tools/setup.sh) reads the same indexes, wheel folders and constraints as `pip install` here."""
import shlex, subprocess, sys

FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint", "no-index": "--no-index"}

def uv_args(config: str) -> list:
    "The uv flags for the lines of `pip config list` (`section.key='value'`); each value once, in their order."
    args, seen = [], set()
    for line in config.splitlines():
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        if name not in FLAGS: continue
        for v in shlex.split(value.strip().strip("'\"")):
            if name == "no-index":
                if v.lower() in ("1", "true", "yes", "on") and FLAGS[name] not in seen: args.append(FLAGS[name])
                seen.add(FLAGS[name])
            elif (name, v) not in seen:
                seen.add((name, v))
                args += [FLAGS[name], v]
    return args

if __name__ == "__main__":
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True)
    print("\n".join(uv_args(out.stdout)))
