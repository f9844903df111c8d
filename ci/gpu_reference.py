#!/usr/bin/env python3
"""PyTorch on the same GPU, in the same run, as the reference the GPU check (ci/gpu-check.sh)
prints ratios against: matrix products per dtype (torch.matmul; fp8 through torch._scaled_mm with
per-tensor scales and fp32 accumulation, no fast accumulation) and copies (host <-> device from
pinned memory, device -> device), each timed the way our benchmark of the same name times it.

Each entry names the infrabench result it compares with ("match": benchmark and axes) and the unit
of the metric to read there, so the table never guesses from a metric's name:
    {"what": "matmul bf16 8192", "match": {"benchmark": "gemm/cublas", "axes": {...}},
     "unit": "GFLOP/s", "value": 612000.0, "method": "..."}

    env -u LD_LIBRARY_PATH python3 ci/gpu_reference.py > reference.json
Exit status: 0 measured, 2 no PyTorch or no GPU here (one line on stderr)."""
import json
import statistics
import sys


def fail(text):
    print(f"gpu_reference: {text}", file=sys.stderr)
    sys.exit(2)


def timed(torch, fn, reps, warm_s=0.2):
    """Median seconds per call of fn over `reps` calls in each of 7 event-timed batches, after
    warming up for `warm_s` (clocks, lazy loading, cuBLAS heuristics)."""
    import time
    t_end = time.perf_counter() + warm_s
    while time.perf_counter() < t_end:
        fn()
        torch.cuda.synchronize()
    times = []
    for _ in range(7):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3 / reps)
    return statistics.median(times)


def matmuls(torch):
    out = []
    # Random data, never zeros (a product of zeros runs faster); shapes beyond the 50 MB L2.
    cases = [("fp32", torch.float32, False), ("tf32", torch.float32, True),
             ("fp16", torch.float16, False), ("bf16", torch.bfloat16, False)]
    for n in (4096, 8192):
        for name, dt, tf32 in cases:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = torch.randn(n, n, device="cuda", dtype=dt)
            b = torch.randn(n, n, device="cuda", dtype=dt)
            s = timed(torch, lambda: torch.matmul(a, b), 3 if n == 8192 else 10)
            for bench in ("gemm/cublas", "gemm/cublaslt"):
                if bench == "gemm/cublaslt" and name in ("fp32", "fp16"):
                    continue  # cublaslt's axis has tf32, bf16, fp8_e4m3
                out.append({"what": f"matmul {name} {n}", "unit": "GFLOP/s",
                            "value": 2.0 * n ** 3 / s / 1e9,
                            "match": {"benchmark": bench, "axes": {"shape": str(n), "dtype": name}},
                            "method": "torch.matmul, CUDA events, median of 7 batches"})
        torch.backends.cuda.matmul.allow_tf32 = False
        if hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn"):
            try:
                a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
                b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()  # column-major B
                one = torch.ones((), device="cuda")
                f = lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                             out_dtype=torch.bfloat16, use_fast_accum=False)
                s = timed(torch, f, 3 if n == 8192 else 10)
                out.append({"what": f"matmul fp8_e4m3 {n}", "unit": "GFLOP/s",
                            "value": 2.0 * n ** 3 / s / 1e9,
                            "match": {"benchmark": "gemm/cublaslt",
                                      "axes": {"shape": str(n), "dtype": "fp8_e4m3"}},
                            "method": "torch._scaled_mm, per-tensor scales, bf16 out, "
                                      "use_fast_accum=False"})
            except (RuntimeError, TypeError) as e:
                print(f"gpu_reference: fp8 not measured: {e}", file=sys.stderr)
    return out


def copies(torch):
    out = []
    size = 64 << 20
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True).random_()
    dev = torch.empty(size, dtype=torch.uint8, device="cuda").random_()
    for what, bench, fn in (("h2d pinned 64MiB", "bandwidth/h2d", lambda: dev.copy_(host, True)),
                            ("d2h pinned 64MiB", "bandwidth/d2h", lambda: host.copy_(dev, True))):
        s = timed(torch, fn, 10)
        out.append({"what": what, "unit": "GB/s", "value": size / s / 1e9,
                    "match": {"benchmark": bench,
                              "axes": {"size": size, "memory": "pinned", "copy": "ce"}},
                    "method": "Tensor.copy_ non_blocking from pinned memory, CUDA events"})
    size = 256 << 20
    src = torch.empty(size, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    s = timed(torch, lambda: dst.copy_(src), 20)
    out.append({"what": "d2d 256MiB (read + written)", "unit": "GB/s", "value": 2 * size / s / 1e9,
                "match": {"benchmark": "bandwidth/d2d", "axes": {"size": size, "copy": "ce"}},
                "method": "Tensor.copy_ on the device, bytes read + written, CUDA events"})
    return out


def main():
    try:
        import torch
    except ImportError:
        fail("PyTorch is not installed here (import torch failed)")
    if not torch.cuda.is_available():
        fail("PyTorch sees no CUDA device here")
    torch.manual_seed(1)
    entries = matmuls(torch) + copies(torch)
    print(json.dumps({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                      "entries": entries}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
