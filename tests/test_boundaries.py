"""Fault injection at every boundary of `mathworklog.boundaries.BOUNDARIES`: each fault the table lists is made here,
and what the library does is checked. An error must be one of `settings`' boundary errors, name the boundary and say
what was expected; an input that is only unusual must load. Run with `-s` to see, fault by fault, the message a user
gets. Nothing here starts a process or loads a model; the whole file takes a few seconds (TRL's import is most of it).
"""
import codecs, inspect, json, os, shutil, sys, textwrap, tomllib, warnings
from pathlib import Path
import pytest, torch
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from safetensors.torch import save_file

from mathworklog import boundaries, data, files, models, runs, settings, worklog
from mathworklog.boundaries import BOUNDARIES
from mathworklog.settings import (OPTIONAL, BoundaryError, MissingDependencyError, MissingResourceError,
                                  PatchTargetError, UnusableInputError)

ROOT = Path(__file__).resolve().parent.parent
FAULTS = {}             # (boundary, fault) -> the function that makes the fault and checks what it gives


def fault(boundary, *names):
    "Register the decorated function as the injection of `names` (faults of the table's row `boundary`)."
    def deco(fn):
        for n in names: FAULTS[(boundary, n)] = fn
        return fn
    return deco


def raised(f, cls=BoundaryError, *must):
    "The message of the boundary error `f()` raises; it must be a `cls` and contain the words `must` and 'expected'."
    with pytest.raises(cls) as e: f()
    msg = str(e.value)
    assert isinstance(e.value, BoundaryError) and "; expected " in msg, msg
    for m in must: assert m in msg, (m, msg)
    return msg


@pytest.fixture
def env(monkeypatch):
    "Set (or, with None, unset) environment variables for one test."
    def set_(**kw):
        for k, v in kw.items():
            if v is None: monkeypatch.delenv(k, raising=False)
            else: monkeypatch.setenv(k, v)
    return set_


def a_model(d: Path, name="m") -> Path:
    "A small model folder: a config and one safetensors file."
    p = d/name
    p.mkdir(parents=True)
    (p/"config.json").write_text('{"model_type": "qwen2"}')
    save_file({"w": torch.zeros(64)}, str(p/"model.safetensors"))
    return p


def truncate(f: Path, n: int = 16): f.write_bytes(f.read_bytes()[:-n])


def denied(monkeypatch, name=None):
    "Reading any file (or only files called `name`) fails with EACCES, as for a file the user may not read."
    real = Path.read_bytes
    def read(p):
        if name is None or p.name == name: raise PermissionError(13, "Permission denied")
        return real(p)
    monkeypatch.setattr(Path, "read_bytes", read)


# ---------------------------------------------------------------------------------------------------------- variables
for var, read in (("MATHWORKLOG_RUNS", lambda: files.runs_root(make=True)), ("MATHWORKLOG_CACHE", files.cache_dir)):
    @fault(f"${var}", "missing", "empty", "a file", "cannot be made")
    def _folder_var(tmp, env, case, var=var, read=read):
        if case == "missing":
            env(**{var: str(tmp/"new"/"x")})
            assert read() == tmp/"new"/"x" and (tmp/"new"/"x").is_dir()
            return "made"
        if case == "empty":
            env(**{var: ""})
            assert read().name in ("runs", "mathworklog")
            return "the default"
        (tmp/"f").write_text("")
        env(**{var: str(tmp/"f") if case == "a file" else str(tmp/"f"/"x")})
        return raised(read, UnusableInputError, f"${var}=", "is a file" if case == "a file" else "cannot be made")


@fault("$MATHWORKLOG_RUNS", "cannot be made (new_run)")
def _runs_new_run(tmp, env, case):
    (tmp/"f").write_text("")
    env(MATHWORKLOG_RUNS=str(tmp/"f"/"runs"))
    return raised(lambda: runs.new_run("demo"), UnusableInputError, "$MATHWORKLOG_RUNS=", "a folder for run folders")


@fault("$MATHWORKLOG_CPU_THREADS", "empty", "not a number", "0")
def _threads(tmp, env, case):
    env(MATHWORKLOG_CPU_THREADS={"empty": "", "not a number": "two", "0": "0"}[case])
    if case == "empty":
        assert settings.cpu_threads() == 1 or torch.cuda.is_available()
        return "the default"
    return raised(settings.cpu_threads, UnusableInputError, "$MATHWORKLOG_CPU_THREADS=", "a whole number ≥ 1")


@fault("$MATHWORKLOG_ALLOW_BUNDLED", "empty", "'true'", "other text")
def _allow_bundled(tmp, env, case):
    env(MATHWORKLOG_ALLOW_BUNDLED={"empty": "", "'true'": "true", "other text": "maybe"}[case])
    if case != "other text":
        assert models.fallback_refused("full") == (case == "empty")
        return "off" if case == "empty" else "on"
    raised(lambda: data.require_gsm8k("full", source="bundled"), UnusableInputError, "is not a switch")
    return raised(lambda: models.fallback_refused("full"), UnusableInputError, "$MATHWORKLOG_ALLOW_BUNDLED='maybe'")


@fault("$MATHWORKLOG_ALLOW_CPU", "empty", "'true'", "other text")
def _allow_cpu(tmp, env, case, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    env(MATHWORKLOG_ALLOW_CPU={"empty": "", "'true'": "true", "other text": "2"}[case])
    if case == "'true'":
        settings.require_gpu("gpu")
        return "on"
    gpu = lambda: settings.require_gpu("gpu")
    if case == "empty": return "off: " + raised(gpu, MissingResourceError, "needs a CUDA GPU")
    return raised(lambda: settings.require_gpu("gpu"), UnusableInputError, "$MATHWORKLOG_ALLOW_CPU='2' is not a switch")


@fault("$MATHWORKLOG_FRESH_LAUNCH", "empty", "'true'", "other text")
def _fresh_launch(tmp, env, case, monkeypatch):
    "Which way `launch` takes, seen without starting a process: the warm launcher and the fresh child stand in."
    from mathworklog import procs
    took = []
    class Fresh:                                          # procs.OwnedProcess, as the fresh path uses it
        stdout = None
        def __init__(self, cmd, **kw):
            took.append("fresh")
            self.proc = self
        def wait(self, *a): return 0
        def kill(self, grace=None): return True
    monkeypatch.setattr(procs, "OwnedProcess", Fresh)
    monkeypatch.setattr(procs, "_warm_run", lambda *a: took.append("warm") or 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    env(MATHWORKLOG_FRESH_LAUNCH={"empty": "", "'true'": "true", "other text": "2"}[case])
    go = lambda: procs.launch("json:dumps", {"obj": 1}, apart=True, log=str(tmp/"log"))
    if case == "other text": return raised(go, UnusableInputError, "$MATHWORKLOG_FRESH_LAUNCH='2' is not a switch")
    assert go() == {} and took == ["warm" if case == "empty" else "fresh"], took
    return "off" if case == "empty" else "on"


@fault("$MATHWORKLOG_TOKENIZER", "missing", "a file", "empty folder", "truncated tokenizer.json", "does not load")
def _tokenizer_var(tmp, env, case):
    t = tmp/"tok"
    if case == "a file": t.write_text("")
    elif case != "missing":
        shutil.copytree(models.scale_dir("tokenizer"), t)
        if case == "empty folder":
            for f in t.iterdir(): f.unlink()
        elif case == "truncated tokenizer.json": truncate(t/"tokenizer.json", 4000)
        else: (t/"tokenizer.json").write_text('{"version": "1.0", "model": 3}')
    env(MATHWORKLOG_TOKENIZER=str(t))
    words = {"missing": "does not exist", "a file": "is a file", "empty folder": "holds no tokenizer.json",
             "truncated tokenizer.json": "tokenizer.json is not valid JSON", "does not load": "does not load ("}[case]
    return raised(models.load_tokenizer, BoundaryError, f"$MATHWORKLOG_TOKENIZER={t}", words, "Point $MATHWORKLOG")


@fault("$MATHWORKLOG_GSM8K", "missing", "a file", "split missing")
def _gsm8k_var(tmp, env, case):
    d = tmp/"gsm8k"
    if case == "a file": d.write_text("")
    if case == "split missing":
        d.mkdir()
        (d/"train.jsonl").write_text('{"question": "q", "answer": "#### 1"}\n')
    env(MATHWORKLOG_GSM8K=str(d))
    words = {"missing": "does not exist", "a file": "is a file", "split missing": "has no test.jsonl"}[case]
    return raised(lambda: data.load_gsm8k("test"), BoundaryError, f"$MATHWORKLOG_GSM8K={d}", words, "train.jsonl")


@fault("$MATHWORKLOG_MODEL_DIR", "missing", "a file", "a broken model inside")
def _model_dir_var(tmp, env, case):
    d = tmp/"models"
    if case == "a file": d.write_text("")
    if case == "a broken model inside": truncate(a_model(d)/"model.safetensors")
    env(MATHWORKLOG_MODEL_DIR=str(d))
    if case != "a broken model inside":
        return raised(lambda: models.model_path("m"), BoundaryError, f"$MATHWORKLOG_MODEL_DIR={d}")
    return raised(lambda: models.model_path("m"), UnusableInputError, "$MATHWORKLOG_MODEL_DIR/m", "is truncated")


@fault("$MATHWORKLOG_WORKLOG", "missing", "unset, none beside the clone")
def _worklog_var(tmp, env, case, monkeypatch):
    if case == "missing":
        env(MATHWORKLOG_WORKLOG=str(tmp/"none.txt"))
        return raised(worklog.worklog_path, MissingResourceError, "$MATHWORKLOG_WORKLOG=", "names no worklog text")
    env(MATHWORKLOG_WORKLOG=None)
    monkeypatch.setattr(worklog, "project_root", lambda: tmp/"clone")
    assert worklog.worklog_path() is None
    return "the checks skip"


@fault("$MATHWORKLOG_WORKLOG_RUN", "unset")
def _worklog_run_var(tmp, env, case):
    "A chapter run alone has no whole-worklog run of its own: the results read the newest finished one, or none."
    from mathworklog import results
    env(MATHWORKLOG_RUNS=str(tmp/"runs"), MATHWORKLOG_WORKLOG_RUN=None)
    assert results.current_worklog_run("tiny") is None
    wl = runs.new_run("worklog", "tiny")
    assert results.current_worklog_run("tiny") is None                    # a worklog still running is not read
    wl.update_meta(status="done")
    assert results.current_worklog_run("tiny") == wl.id
    return "a chapter run alone: results read the newest finished worklog run"


# ------------------------------------------------------------------------------------------------------- dependencies
for name in OPTIONAL:
    @fault(name, "absent", "unsupported version")
    def _dependency(tmp, env, case, monkeypatch, name=name):
        import importlib.metadata as md, importlib.util as iu
        if case == "absent": monkeypatch.setattr(iu, "find_spec", lambda n, *a: None)
        else:
            monkeypatch.setattr(iu, "find_spec", lambda n, *a: object())
            monkeypatch.setattr(md, "version", lambda d: "0.0.1")
        how = OPTIONAL[name][1].split(" on ")[0]
        return raised(lambda: settings.require(name), MissingDependencyError, name, how)


def test_absent_libraries_are_refused_where_they_are_asked_for(monkeypatch):
    "The library's own doors say it before anything runs: a trackio report, the runner, a vLLM engine, the transport."
    import importlib.util as iu
    from mathworklog import generation, runner, weights
    real = iu.find_spec
    monkeypatch.setattr(iu, "find_spec", lambda n, *a: None if n in OPTIONAL else real(n, *a))
    raised(lambda: runs.tracking("trackio"), MissingDependencyError, "mathworklog[tracking]")
    raised(lambda: runner.run_worklog(only=["02_baseline"]), MissingDependencyError, "papermill", "[worklog]")
    raised(lambda: generation.start_llm(model="x"), MissingDependencyError, "vllm is not installed")
    raised(lambda: weights.receive(iter([])), MissingDependencyError, "mathworklog[vllm]")


def test_the_optional_libraries_versions_are_the_extras():
    "`settings.OPTIONAL` and pyproject.toml's extras name the same distributions with the same version ranges."
    extras = tomllib.loads((ROOT/"pyproject.toml").read_text())["project"]["optional-dependencies"]
    reqs = {}
    for extra, rs in extras.items():
        for r in map(Requirement, rs): reqs.setdefault(r.name, []).append((extra, r.specifier))
    for name, (dists, how, _) in OPTIONAL.items():
        for d, spec in dists:
            found = [(e, s) for e, s in reqs.get(d, []) if s == SpecifierSet(spec)]
            assert found, f"{d} {spec} (settings.OPTIONAL['{name}']) is in no extra of pyproject.toml: {reqs.get(d)}"
            assert any(f"mathworklog[{e}]" in how for e, _ in found), (name, how, found)


# -------------------------------------------------------------------------------------------------------------- files
MODEL_CASES = {"missing": ("does not exist", MissingResourceError), "a file": ("is a file", UnusableInputError),
               "no config.json": ("config.json does not exist", MissingResourceError),
               "config.json not JSON": ("config.json is not valid JSON", UnusableInputError),
               "no weights": ("holds no weights", UnusableInputError),
               "truncated weights": ("model.safetensors is truncated", UnusableInputError),
               "unreadable": ("config.json cannot be read (Permission denied)", UnusableInputError)}

@fault("model folder", *MODEL_CASES)
def _model_folder(tmp, env, case, monkeypatch):
    p = tmp/"m"
    if case == "a file": p.write_text("")
    elif case != "missing": a_model(tmp)
    if case == "no config.json": (p/"config.json").unlink()
    if case == "config.json not JSON": (p/"config.json").write_text('{"model_type": ')
    if case == "no weights": (p/"model.safetensors").unlink()
    if case == "truncated weights": truncate(p/"model.safetensors")
    if case == "unreadable":
        denied(monkeypatch, "config.json")
    words, cls = MODEL_CASES[case]
    load = (lambda: models.model_path(str(p))) if case in ("missing", "a file") else (lambda: models.load_model(str(p)))
    if case == "missing": return raised(load, cls, f"model {str(p)!r} is not here")
    return raised(load, cls, f"model folder {p}", words, "config.json with a model_type")


@fault("adapter folder", "missing", "empty config", "no weights", "truncated weights", "a torn checkpoint")
def _adapter_folder(tmp, env, case):
    if case == "a torn checkpoint":
        for step in (1, 2):
            c = tmp/"checkpoints"/f"checkpoint-{step}"
            c.mkdir(parents=True)
            (c/"trainer_state.json").write_text(json.dumps(dict(global_step=step)))
            save_file({"a": torch.ones(8)}, str(c/"adapter_model.safetensors"))
        truncate(tmp/"checkpoints"/"checkpoint-2"/"adapter_model.safetensors")
        assert Path(runs.latest_checkpoint(tmp)).name == "checkpoint-1"
        return "resume falls back to checkpoint-1, saying why it passed checkpoint-2 over"
    a = tmp/"a"
    if case != "missing":
        a.mkdir()
        (a/"adapter_config.json").write_text("" if case == "empty config" else '{"peft_type": "LORA"}')
        if case != "no weights": save_file({"w": torch.zeros(8)}, str(a/"adapter_model.safetensors"))
        if case == "truncated weights": truncate(a/"adapter_model.safetensors")
    words = {"missing": "does not exist", "empty config": "adapter_config.json is not valid JSON",
             "no weights": "holds no adapter_model.safetensors", "truncated weights": "is truncated"}[case]
    return raised(lambda: models.check_adapter_dir(a), BoundaryError, f"adapter folder {a}", words)


@fault("tokenizer folder", "empty folder", "truncated tokenizer.json", "empty tokenizer.json")
def _tokenizer_folder(tmp, env, case):
    t = tmp/"tok"
    shutil.copytree(models.scale_dir("tokenizer"), t)
    if case == "empty folder":
        for f in t.iterdir(): f.unlink()
    if case == "truncated tokenizer.json": truncate(t/"tokenizer.json", 100)
    if case == "empty tokenizer.json": (t/"tokenizer.json").write_text("")
    words = "holds no tokenizer.json" if case == "empty folder" else "tokenizer.json is not valid JSON"
    return raised(lambda: models.load_tokenizer(str(t)), UnusableInputError, f"tokenizer folder {t}", words)


ROW = {"question": "Zoë bought 3 cafés for 5 € each. How much?", "answer": "3 * 5 = <<3*5=15>>15\n#### 15"}
GSM8K_CASES = {"empty": ("", "is empty"),
               "truncated": (json.dumps(ROW) + "\n" + json.dumps(ROW)[:30], ":2 is not valid JSON"),
               "not an object": ('["q", "a"]\n', ":1 is a JSON list, not an object"),
               "missing a field": ('{"question": "q"}\n', ":1 is missing answer")}

@fault("GSM8K jsonl", *GSM8K_CASES, "a folder", "unreadable", "UTF-8 BOM", "CRLF", "Latin-1", "UTF-16")
def _gsm8k_file(tmp, env, case, monkeypatch):
    f, text = tmp/"train.jsonl", json.dumps(ROW, ensure_ascii=False) + "\n"
    load = lambda: data.load_gsm8k("train", source=str(tmp))
    if case in GSM8K_CASES:
        f.write_text(GSM8K_CASES[case][0])
        return raised(load, UnusableInputError, str(f), GSM8K_CASES[case][1], "'question' and 'answer'")
    if case == "a folder":
        f.mkdir()
        return raised(load, UnusableInputError, f"{f} is a folder")
    if case == "unreadable":
        f.write_text(text)
        denied(monkeypatch)
        return raised(load, UnusableInputError, f"{f} cannot be read (Permission denied)")
    raw = {"UTF-8 BOM": codecs.BOM_UTF8 + text.encode(), "CRLF": (text * 2).replace("\n", "\r\n").encode(),
           "Latin-1": text.replace("€", "EUR").encode("latin-1"), "UTF-16": text.encode("utf-16")}[case]
    f.write_bytes(raw)
    rows = load()
    assert rows[0]["question"] == ROW["question"].replace("€", "EUR" if case == "Latin-1" else "€"), rows
    return f"loads ({len(rows)} row{'s' * (len(rows) > 1)})"


RUN_CASES = {"empty meta.json": ("", "is empty"), "meta.json not JSON": ('{"chapter": ', "is not valid JSON"),
             "not a run's meta.json": ('{"status": "done"}', "is not a run's meta.json")}

@fault("run folder and meta.json", "missing", *RUN_CASES, "unreadable", "BOM and CRLF", "a damaged run among others",
       "status nan")
def _run_folder(tmp, env, case, monkeypatch):
    r = runs.new_run("demo", root=tmp)
    m = r.path/"meta.json"
    if case == "missing": return raised(lambda: runs.resolve_run("demo-nope", "demo", root=tmp), MissingResourceError,
                                        "run 'demo-nope' is not here")
    if case in RUN_CASES:
        m.write_text(RUN_CASES[case][0])
        return raised(lambda: runs.resolve_run(r.id, "demo", root=tmp), runs.MalformedRunError, f"run {r.id}: {m}",
                      RUN_CASES[case][1])
    if case == "unreadable":
        denied(monkeypatch)
        return raised(lambda: r.meta, UnusableInputError, f"run {r.id}: {m} cannot be read")
    if case == "BOM and CRLF":
        m.write_bytes(codecs.BOM_UTF8 + json.dumps(r.meta, indent=2).replace("\n", "\r\n").encode())
        assert r.meta["chapter"] == "demo"
        return "loads"
    if case == "status nan":
        r.update_meta(status="nan", results=dict(nan_step=3))
        return raised(lambda: runs.resolve_run(r.id, "demo", root=tmp), runs.RunRefusedError, "has status 'nan'")
    good = runs.new_run("demo", root=tmp)
    good.update_meta(status="done")
    m.write_text("{")
    with pytest.warns(UserWarning, match=f"find_runs skips run {r.id}") as w: assert runs.find_runs(root=tmp) == [good]
    return f"find_runs skips it, naming it: {w[0].message}"


@fault("metrics.jsonl", "torn last line", "torn middle line")
def _metrics(tmp, env, case):
    f = tmp/"metrics.jsonl"
    torn = '{"step": 2, "lo'
    f.write_text('{"step": 1}\n' + (torn if case == "torn last line" else torn + '\n{"step": 3}\n'))
    if case == "torn middle line": return raised(lambda: runs.metrics_rows(f), UnusableInputError, f"{f}:2")
    with pytest.warns(UserWarning, match="torn last line") as w: assert runs.metrics_rows(f) == [{"step": 1}]
    return f"loads, with a warning: {w[0].message}"


@fault("scale model", "missing")
def _scale_model(tmp, env, case, monkeypatch):
    monkeypatch.setattr(models, "data_dir", lambda: tmp)
    clone = raised(lambda: models.scale_dir("student"), MissingResourceError, "git checkout -- data/scale")
    monkeypatch.setattr(models, "clone_root", lambda: None)
    wheel = raised(lambda: models.scale_dir("student"), MissingResourceError, "reinstall")
    return f"{clone}\n  (from a wheel:) {wheel}"


# ------------------------------------------------------------------------------------------------------------ patches
def without_source(fn):
    "`fn` as a zipped or compiled install has it: the same code and globals, and no source `inspect` can find."
    g = dict(fn.__globals__)
    exec(compile(textwrap.dedent(inspect.getsource(fn)), "<trl in a zip>", "exec"), g)
    return g[fn.__name__]


def warned(f) -> str:
    "The last warning `f()` gives (it must give one)."
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        h = f()
    assert ws, "no warning"
    if h is not None: h.undo()
    return str(ws[-1].message)


@fault("TRL VLLMGeneration._iter_named_params", "source unavailable", "fixed upstream", "absent",
       "no trl.generation.vllm_generation")
def _sync_patch(tmp, env, case, monkeypatch):
    from mathworklog import weights
    G = weights.trl_generation_class()
    if case == "no trl.generation.vllm_generation":
        monkeypatch.setitem(sys.modules, "trl.generation.vllm_generation", None)
        return raised(weights.patch_trl_lora_sync, PatchTargetError, "TRL ", "pip install 'trl==1.16.0'")
    if case == "absent": monkeypatch.delattr(G, "_iter_named_params")
    if case == "fixed upstream":
        def _iter_named_params(self):
            self.model.merge_adapter()
            for name, param in self.model.named_parameters(): yield name, param.data.clone()
            self.model.unmerge_adapter()
        monkeypatch.setattr(G, "_iter_named_params", _iter_named_params)
    if case == "source unavailable": monkeypatch.setattr(G, "_iter_named_params", without_source(G._iter_named_params))
    msg = warned(weights.patch_trl_lora_sync)
    assert {"source unavailable": "cannot be told", "fixed upstream": "fixed upstream",
            "absent": "has no VLLMGeneration._iter_named_params"}[case] in msg, msg
    return ("patched, with a warning: " if case == "source unavailable" else "not patched, with a warning: ") + msg


@fault("TRL VLLMGeneration.sync_weights", "source unavailable", "fixed upstream")
def _reload_patch(tmp, env, case, monkeypatch):
    from mathworklog import weights
    G = weights.trl_generation_class()
    if case == "fixed upstream": monkeypatch.setattr(G, "sync_weights", lambda self: None)
    else: monkeypatch.setattr(G, "sync_weights", without_source(G.sync_weights))
    msg = warned(weights.patch_trl_reload_sync)
    assert ("cannot be told" if case == "source unavailable" else "no longer calls load_weights") in msg, msg
    return ("patched, with a warning: " if case == "source unavailable" else "not patched, with a warning: ") + msg


@fault("TRL GRPOTrainer._compute_loss", "source unavailable", "another shape")
def _is_ratio_shape(tmp, env, case, monkeypatch):
    from trl import GRPOTrainer
    from mathworklog import isratio
    if case == "source unavailable":
        monkeypatch.setattr(GRPOTrainer, "_compute_loss", without_source(GRPOTrainer._compute_loss))
    else:
        def _compute_loss(self, model, inputs):           # reads the ratio before it scores the policy
            w = inputs["importance_sampling_ratio"]
            return self._get_per_token_logps_and_entropies(model, w)
        monkeypatch.setattr(GRPOTrainer, "_compute_loss", _compute_loss)
    caches = (isratio.loss_forward_first, isratio._trl_shape_ok)
    def check():
        assert isratio._trl_shape_ok() is False
        assert boundaries.check_boundaries().loc["TRL GRPOTrainer._compute_loss", "status"].endswith("TRL's own pass")
    for f in caches: f.cache_clear()
    try: msg = warned(check)
    finally:
        for f in caches: f.cache_clear()
    assert ("cannot be read" if case == "source unavailable" else "reads the ratio before") in msg, msg
    return "TRL's own no-grad pass, with a warning: " + msg


@fault("TRL's vLLM LLM, torch's CUDA streams", "vLLM absent")
def _colocated(tmp, env, case, monkeypatch):
    import importlib.util as iu
    from mathworklog import weights
    real = iu.find_spec
    monkeypatch.setattr(iu, "find_spec", lambda n, *a: None if n == "vllm" else real(n, *a))
    def enter():
        with weights.colocated_vllm(): pass
    return raised(enter, MissingDependencyError, "vllm is not installed", "mathworklog[vllm]")


# -------------------------------------------------------------------------------------------------------------- tests
def cases():
    "Every (boundary, fault) of the table that the library reads (the test suite's own variables and tools aside)."
    return [(b.name, f) for b in BOUNDARIES for f in b.faults if not b.read_by.startswith("tests/")]


def test_every_fault_of_the_table_is_injected():
    assert not [c for c in cases() if c not in FAULTS], [c for c in cases() if c not in FAULTS]


@pytest.mark.parametrize("boundary,case", sorted(FAULTS), ids=[f"{b}: {c}" for b, c in sorted(FAULTS)])
def test_fault(boundary, case, tmp_path, env, monkeypatch):
    fn = FAULTS[(boundary, case)]
    kw = {"monkeypatch": monkeypatch} if "monkeypatch" in inspect.signature(fn).parameters else {}
    got = fn(tmp_path, env, case, **kw)
    print(f"\n{boundary} | {case} | {got}")


def test_the_table_names_every_variable_the_code_reads():
    "Every `MATHWORKLOG_*` name in the package, the tests, tools and bench has its row."
    import re
    names = {m for p in [*ROOT.glob("mathworklog/*.py"), *ROOT.glob("tests/*.py"), *ROOT.glob("tools/*"),
                         *ROOT.glob("bench/*.py")] if p.is_file()
             for m in re.findall(r"MATHWORKLOG_[A-Z0-9_]*[A-Z0-9]", p.read_text(errors="replace"))}
    assert names <= {b.name[1:] for b in BOUNDARIES}, names - {b.name[1:] for b in BOUNDARIES}


def test_check_boundaries_reports_a_bad_variable(env):
    env(MATHWORKLOG_CPU_THREADS="many")
    t = boundaries.check_boundaries()
    assert t.loc["$MATHWORKLOG_CPU_THREADS", "status"].startswith("$MATHWORKLOG_CPU_THREADS='many' is not allowed")
