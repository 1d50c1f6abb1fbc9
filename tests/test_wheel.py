"""The package as a user gets it from `pip install`: `pip wheel . --no-deps` builds the wheel, a fresh virtual
environment outside the repository installs it (its dependencies come from this environment's site-packages, so nothing
is downloaded), and the README's public library examples run there, from a folder that is no clone: the rewards score,
`patch_trl_lora_sync` patches TRL, and TRL's `GRPOTrainer` trains two steps on the shipped tiny student. The console
scripts either work or say at once that they need a clone, and which command gets one.

The wheel is the library and the data it reads: `mathworklog/*.py`, the worklog's figures, and `data/` (the bundled
problems and the scale model) as `mathworklog/bundled`. About 40 s on two busy cores, most of it TRL's import and the
two GRPO steps."""
import importlib.metadata as md, json, os, shutil, subprocess, sys, sysconfig, textwrap, time, tomllib, zipfile
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent


def pyproject() -> dict: return tomllib.loads((ROOT/"pyproject.toml").read_text())


def test_every_data_folder_ships():
    "setuptools ignores a data folder it is not told of: each folder under data/ is a listed package of the wheel."
    cfg = pyproject()["tool"]["setuptools"]
    assert cfg["package-dir"]["mathworklog.bundled"] == "data"
    folders = {"mathworklog.bundled" + "".join(f".{p}" for p in d.relative_to(ROOT/"data").parts)
               for d in [ROOT/"data", *(ROOT/"data").rglob("*")] if d.is_dir()}
    missing = sorted(folders - set(cfg["packages"]))
    assert not missing, f"add {missing} to [tool.setuptools] packages (and its files to package-data) in pyproject.toml"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    "The wheel, built from a copy of what it is made of (the build's own folders never land in the checkout)."
    out = tmp_path_factory.mktemp("wheel")
    src = out/"src"
    src.mkdir()
    for f in ("pyproject.toml", "README.md"): shutil.copy(ROOT/f, src/f)
    shutil.copytree(ROOT/"mathworklog", src/"mathworklog", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT/"data", src/"data")
    # this environment's setuptools when it is recent enough (no network); else pip's isolated build
    isolation = ["--no-build-isolation"] if int(md.version("setuptools").split(".")[0]) >= 77 else []
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", *isolation, "-w", str(out), "-q"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return next(out.glob("mathworklog-*.whl"))


def test_the_wheel_holds_the_library_and_its_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    want = {"mathworklog/settings.py", "mathworklog/worklog_figures.json", "mathworklog/bundled/train.jsonl",
            "mathworklog/bundled/test.jsonl", "mathworklog/bundled/scale/figures.json",
            "mathworklog/bundled/scale/tokenizer/tokenizer.json", "mathworklog/bundled/scale/student/model.safetensors",
            "mathworklog/bundled/scale/teacher/model.safetensors", "mathworklog/bundled/scale/strong/model.safetensors"}
    assert want <= names, want - names
    assert not [n for n in names if n.startswith(("nbs/", "tests/", "tools/", "bench/"))]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    "A fresh virtual environment outside the repo with the wheel installed; this environment's packages beneath it."
    d = tmp_path_factory.mktemp("venv")/"v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(d)], check=True, timeout=120)
    py = d/"bin"/"python"
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True,
                               capture_output=True, text=True).stdout.strip())
    # this environment's site-packages after the venv's own: a plain path, so its .pth files (an editable install of
    # this checkout among them) are not run, and the wheel's mathworklog is the only one to import
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site/"zz-this-environment.pth").write_text("\n".join(paths) + "\n")
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q",
                        str(wheel)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return d


def run_in(venv: Path, tmp: Path, *cmd, **extra) -> subprocess.CompletedProcess:
    "Run `cmd` (a script of the venv) from an empty folder outside the repo, with a user's environment and `extra`."
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MATHWORKLOG_", "PYTHON"))}
    env |= dict(MATHWORKLOG_RUNS=str(tmp/"runs"), MATHWORKLOG_CACHE=str(tmp/"cache"), MATHWORKLOG_CPU_THREADS="1",
                HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", CUDA_VISIBLE_DEVICES="", VENV=str(venv), **extra)
    cwd = tmp/"elsewhere"
    cwd.mkdir(exist_ok=True)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


EXAMPLES = """
import os, warnings
warnings.filterwarnings("ignore")
import mathworklog
from mathworklog.files import clone_root, data_dir
here = os.path.dirname(mathworklog.__file__)
assert here.startswith(os.environ["VENV"]) and clone_root() is None, (here, clone_root())
assert str(data_dir()) == os.path.join(here, "bundled"), data_dir()

# the README: the answer format and its rewards
from mathworklog.rewards import score_completions
t = score_completions(["<start_working_out>48/2 = 24. 48+24 = 72.<end_working_out><SOLUTION>72</SOLUTION>",
                       "The answer is 72."], answers=["72", "72"], steps=[["24"], ["24"]])
assert t.total[0] == 5.25 and t.total[1] < t.total[0], t

# the README: the sync fix patches the installed TRL (and undoes)
from mathworklog.weights import is_patched, patch_trl_lora_sync
with patch_trl_lora_sync() as h: assert is_patched() == "clone"
assert not is_patched()

# the README: TRL's GRPOTrainer on the shipped tiny student, the library's recipe, rollouts from a RolloutCopy
from trl import GRPOTrainer
from mathworklog.data import load_gsm8k, prepare, preset_tokenizer
from mathworklog.grpo import GRPOSettings, attach_rollout_copy, grpo_config, grpo_dataset
from mathworklog.models import model_path
from mathworklog.rewards import REWARD_FUNCS
from mathworklog.settings import lora_config
tok = preset_tokenizer("tiny")
path = model_path("tiny", tok)
assert path.startswith(os.path.join(here, "bundled")), path
ds = grpo_dataset(prepare(load_gsm8k("train", n=8, preset="tiny")))
s = GRPOSettings(steps=2, prompts_per_step=2, num_generations=2, max_completion_length=8, lr=1e-3, lora_r=4)
trainer = GRPOTrainer(model=path, reward_funcs=REWARD_FUNCS, args=grpo_config("out", s, save_strategy="no"),
                      train_dataset=ds, processing_class=tok, peft_config=lora_config(4))
attach_rollout_copy(trainer)
trainer.train()
print("GRPO steps:", trainer.state.global_step)
"""


def test_readme_examples_run_from_the_wheel(venv, tmp_path):
    t0 = time.perf_counter()
    r = run_in(venv, tmp_path, str(venv/"bin"/"python"), "-c", EXAMPLES)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    assert "GRPO steps: 2" in r.stdout, r.stdout
    print(f"\nthe README's examples from the wheel: {time.perf_counter() - t0:.1f} s")


def test_console_scripts_work_or_name_the_clone(venv, tmp_path):
    t0 = time.perf_counter()
    r = run_in(venv, tmp_path, str(venv/"bin"/"mathworklog-worklog"), "--preset", "tiny")
    assert r.returncode == 1 and "git clone https://github.com/mathworklog/mathworklog" in r.stderr, r.stderr[-3000:]
    assert "ModuleNotFoundError" not in r.stderr and time.perf_counter() - t0 < 60
    print(f"\nmathworklog-worklog, from the wheel ({time.perf_counter() - t0:.1f} s):\n{r.stderr.strip()}")
    r = run_in(venv, tmp_path, str(venv/"bin"/"mathworklog-launch"))
    assert r.returncode == 1 and "usage: mathworklog-launch module:function args.json result.json" in r.stderr, r.stderr
    (tmp_path/"a.json").write_text(json.dumps({"obj": [1, 2]}))
    r = run_in(venv, tmp_path, str(venv/"bin"/"mathworklog-launch"), "json:dumps", str(tmp_path/"a.json"),
               str(tmp_path/"r.json"))
    assert r.returncode == 0 and json.loads((tmp_path/"r.json").read_text()) == "[1, 2]", r.stderr[-3000:]
