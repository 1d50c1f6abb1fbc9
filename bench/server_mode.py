"""Chapter 08's live arms in the worklog's own setup (issue 40): vLLM's own server on one GPU (`server.VLLMServer`,
NCCL weight transfer, the RL routes TRL syncs through) and an unmodified `GRPOTrainer(vllm_mode="server")` on another,
through TRL's own client: `server_arms.server_live_sync`, one server per dtype, shared by that dtype's arms. On two GPUs
the trainer runs under `accelerate launch` on GPU 0 (bench/gpu_run.sh's `server-mode` item) and the server on
--server-gpu; without a GPU the same command runs both on the CPU, the server with the package's `gloo` engine.
Arms merge into --out/live_sync_server.json (sync.live_sync's format: sync.live_growth reads it), with each arm's
server start, median sync and step times, and the one-sync trace read back from the server."""
import argparse, json, sys, time
from pathlib import Path


def main(argv=None):
    from mathworklog.sync import LIVE_ARMS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=".", help="folder of live_sync_server.json")
    p.add_argument("--preset", default="gpu", help="the start model and settings (sync.live_settings): gpu or tiny")
    p.add_argument("--arms", nargs="*", default=list(LIVE_ARMS), choices=list(LIVE_ARMS))
    p.add_argument("--server-gpu", default="1", help="CUDA_VISIBLE_DEVICES of the server")
    p.add_argument("--gpu-mem", type=float, default=0.5, help="the server's share of its GPU")
    p.add_argument("--steps", type=int)
    p.add_argument("--prompts", type=int)
    p.add_argument("--lr-schedule", choices=("linear", "constant"))
    p.add_argument("--buffer-bytes", type=int, help="CPU transport only: vLLM's packed buffer (GPUs: TRL's 1 GiB)")
    p.add_argument("--deadline", type=float, help="seconds from now after which the arms stop, keeping their steps")
    a = p.parse_args(argv)
    from mathworklog.settings import cpu_threads
    from mathworklog.sync import live_growth, live_settings
    from mathworklog.trace import start_model
    from mathworklog.server_arms import server_live_sync
    cpu_threads()
    kw = dict(steps=a.steps, prompts=a.prompts, lr_schedule=a.lr_schedule, buffer_size_bytes=a.buffer_bytes)
    s = live_settings(a.preset, **{k: v for k, v in kw.items() if v is not None})
    t0, start = time.time(), start_model(a.preset)
    server_live_sync(start, a.out, s, a.preset, a.arms, deadline=t0 + a.deadline if a.deadline else None,
                     gpus=a.server_gpu, gpu_memory_utilization=a.gpu_mem)
    out = Path(a.out) / "live_sync_server.json"
    print(live_growth(out).to_string())
    for arm, r in json.loads(out.read_text())["arms"].items():
        print(arm, {k: r.get(k) for k in ("server_start_seconds", "sync_seconds", "step_seconds", "stuck",
                                          "lora_matrices", "chunks")})


if __name__ == "__main__":
    sys.exit(main())
