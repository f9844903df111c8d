#!/usr/bin/env python3
"""The CPU training step against PyTorch on the same machine, in the same run.

For each configuration (model, batch, seq) and thread count, runs infrabench's training/step on
the CPU (fp32) and the same GPT-2 or ViT step in PyTorch (pytorch_reference.py --device cpu: fp32,
AdamW, eager), alternating which goes first, several repetitions, and prints each side's median
tokens/s and the median ratio ours / PyTorch with its spread (min..max over the repetitions). On
a machine shared with other work the alternation and repetition keep the ratio fair: a burst of
load hits both sides of the same repetition, not one side of the whole comparison.

GPT-2 compares the whole step (tokens_per_s_per_rank: our step also reads its tokens from
storage). ViT compares the model's part: on a CPU node ours decodes the JPEG files inside the
step (its data wait) while PyTorch's images are already in memory, so ours is taken as the
batch's tokens over the step's other phases (forward, backward, optimizer, other; means).

    python3 benchmarks/training/cpu_vs_pytorch.py [--config gpt2-tiny:8:64 ...] [--threads 1,2]
        [--repetitions 5] [--infrabench build-cpu/infrabench] [--json out.json]

Exit status: 0 compared, 1 a run failed (its error on stderr), 2 bad input or no PyTorch here.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "pytorch_reference.py")
# PyTorch's OpenMP workers spin-wait by default: on a machine whose CPUs other work also uses,
# its 2-thread gpt2-tiny step measured here fell to ~1k tokens/s (from ~36k passive), which
# would compare us against a pathology. The passive policy (unless the caller sets one) gives
# PyTorch its best rate here; ours runs as infrabench runs.
TORCH_ENV = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
DEFAULT_CONFIGS = ["gpt2-tiny:8:64", "vit-tiny:8:17", "gpt2-124m:1:64"]


def fail(code, text):
    print(f"cpu_vs_pytorch: {text}", file=sys.stderr)
    sys.exit(code)


def parse_config(text):
    parts = text.split(":")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[2].isdigit() or \
            int(parts[1]) < 1 or int(parts[2]) < 1:
        fail(2, f"--config {text!r} is not model:batch:seq (e.g. gpt2-tiny:8:64)")
    return parts[0], int(parts[1]), int(parts[2])


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", action="append", help="model:batch:seq (repeatable; default "
                   + ", ".join(DEFAULT_CONFIGS) + ")")
    p.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default 1,2)")
    p.add_argument("--repetitions", type=int, default=5, help="alternated pairs (default 5)")
    p.add_argument("--min-time", type=float, default=1.0,
                   help="seconds each side samples per repetition, at least (default 1)")
    p.add_argument("--infrabench", default=os.environ.get("INFRABENCH_BIN", "build-cpu/infrabench"))
    p.add_argument("--python", default="/usr/bin/python3", help="the python3 that has PyTorch")
    p.add_argument("--json", help="also write every measurement and the medians here")
    a = p.parse_args(argv)
    a.configs = [parse_config(c) for c in (a.config or DEFAULT_CONFIGS)]
    try:
        a.thread_counts = [int(t) for t in a.threads.split(",")]
    except ValueError:
        fail(2, f"--threads {a.threads!r} is not a comma-separated list of counts")
    if any(t < 1 for t in a.thread_counts) or a.repetitions < 1 or a.min_time <= 0:
        fail(2, "--threads, --repetitions and --min-time must be positive")
    if not os.access(a.infrabench, os.X_OK):
        fail(2, f"--infrabench {a.infrabench} is not an executable (build the cpu-only preset)")
    return a


def run(cmd, env=None):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    if done.returncode != 0:
        fail(1, f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout


def ours(a, model, batch, seq, threads, scratch):
    report = os.path.join(scratch, "report.json")
    run([a.infrabench, "run", "-q", "--filter", "^training/step$", "-a", f"model={model}",
         "-a", f"batch={batch}", "-a", f"seq={seq}", "-a", f"threads={threads}",
         "-a", "device=cpu", "--min-time", str(a.min_time), "--telemetry", "off",
         "--scratch", scratch, "-o", report, "--format", "csv"])
    with open(report) as f:
        results = json.load(f)["results"]
    passed = [r for r in results if r.get("status") == "passed"]
    if not passed:
        fail(1, f"training/step {model} B{batch} T{seq} {threads} thread(s) did not pass: "
                f"{[r.get('status_reason', r.get('status')) for r in results]}")
    metrics = {m["name"]: m["value"] for m in passed[0]["metrics"]}
    if model.startswith("vit"):
        # On a CPU node the JPEG decode runs inside the step (data wait), while PyTorch's batch
        # is already in memory: compare the model's part, the step's other phases (means).
        compute_ms = sum(metrics[m] for m in ("forward_ms", "backward_ms", "allreduce_ms",
                                              "optimizer_ms", "other_ms"))
        return batch * seq / compute_ms * 1e3
    return metrics["tokens_per_s_per_rank"]


def pytorch(a, model, batch, seq, threads, steps):
    out = run(env=TORCH_ENV, cmd=[a.python, REFERENCE, "--device", "cpu", "--dtype", "fp32", "--model", model,
               "--batch", str(batch), "--seq", str(seq), "--threads", str(threads),
               "--steps", str(steps), "--warmup", "3", "--json"])
    return json.loads(out)["eager"]["tokens_per_s"]


def compare(a, model, batch, seq, threads, scratch):
    rows = []
    steps = 10  # then sized from the first measurement
    for rep in range(a.repetitions):
        sides = [("ours", ours), ("torch", pytorch)]
        if rep % 2:
            sides.reverse()
        rate = {}
        for name, fn in sides:
            extra = (scratch,) if name == "ours" else (steps,)
            rate[name] = fn(a, model, batch, seq, threads, *extra)
        # PyTorch's steps sized to take about as long as ours sample.
        steps = max(10, min(300, int(a.min_time * rate["torch"] / (batch * seq))))
        rows.append({"ours": rate["ours"], "torch": rate["torch"],
                     "ratio": rate["ours"] / rate["torch"]})
        print(f"    rep {rep + 1}: ours {rate['ours']:10,.0f}  torch {rate['torch']:10,.0f}  "
              f"ratio {rows[-1]['ratio']:.3f}", flush=True)
    ratios = [r["ratio"] for r in rows]
    return {"model": model, "batch": batch, "seq": seq, "threads": threads, "runs": rows,
            "ours_median": statistics.median(r["ours"] for r in rows),
            "torch_median": statistics.median(r["torch"] for r in rows),
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios),
            "ratio_max": max(ratios)}


def main(argv):
    a = parse_args(argv)
    check = subprocess.run([a.python, "-c", "import torch; print(torch.__version__)"],
                           capture_output=True, text=True)
    if check.returncode != 0:
        fail(2, f"{a.python} cannot import torch (apt-get install python3-torch)")
    summary = []
    with tempfile.TemporaryDirectory(prefix="cpu-vs-pytorch-") as scratch:
        for model, batch, seq in a.configs:
            for threads in a.thread_counts:
                print(f"{model} B{batch} T{seq}, {threads} thread(s):", flush=True)
                summary.append(compare(a, model, batch, seq, threads, scratch))
    print(f"\nPyTorch {check.stdout.strip()} (OMP_WAIT_POLICY={TORCH_ENV['OMP_WAIT_POLICY']}), "
          f"{a.repetitions} alternated repetitions each")
    print(f"{'configuration':28s} {'ours tok/s':>11s} {'torch tok/s':>11s} {'ratio':>6s}  spread")
    for s in summary:
        what = f"{s['model']} B{s['batch']} T{s['seq']} {s['threads']}t"
        print(f"{what:28s} {s['ours_median']:11,.0f} {s['torch_median']:11,.0f} "
              f"{s['ratio_median']:6.3f}  {s['ratio_min']:.3f}..{s['ratio_max']:.3f}")
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            json.dump({"torch": check.stdout.strip(),
                       "omp_wait_policy": TORCH_ENV["OMP_WAIT_POLICY"], "results": summary}, f,
                      indent=2)
        os.replace(a.json + ".tmp", a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
